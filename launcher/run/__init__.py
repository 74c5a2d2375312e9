"""The run loop's one home: `attempt` (one attempt: push → start → follow → watch → stop → outcome), `loop`
(`execute(ctx)`: attempts, restart policy, spares, resume, ledger), `forensics` (stacks, flight recorder, silent
nodes, stragglers), `signals` (how SIGINT and SIGTERM reach a run). Import the module you need; this face hands
nothing on."""
