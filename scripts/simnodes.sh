#!/usr/bin/env bash
# Start / stop simulated SSH nodes by hand (tests/simnodes.py), e.g. to try `rlaunch` against them.
#   scripts/simnodes.sh start 3 [sim.yaml]   -> nodes up in the background, inventory written to sim.yaml
#   scripts/simnodes.sh stop                 -> stops them (by the PID we recorded, never by name)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
PIDFILE=${RLAUNCH_SIMNODES_PIDFILE:-/run/rlaunch-simnodes.pid}
LOG=${RLAUNCH_SIMNODES_LOG:-/run/rlaunch-simnodes.log}

case "${1:-}" in
  start)
    n=${2:?usage: $0 start N [inventory.yaml]}
    inv=${3:-sim.yaml}
    if [[ -f $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
      echo "already running (pid $(cat "$PIDFILE")); $0 stop first" >&2; exit 1
    fi
    : >"$LOG"
    "$PY" tests/simnodes.py "$n" --inventory "$inv" >>"$LOG" 2>&1 &
    echo $! >"$PIDFILE"
    for _ in $(seq 200); do  # until the nodes answer (or the starter died)
      grep -q "nodes up" "$LOG" && { cat "$LOG"; echo "inventory: $inv"; exit 0; }
      kill -0 "$(cat "$PIDFILE")" 2>/dev/null || { cat "$LOG" >&2; rm -f "$PIDFILE"; exit 1; }
      sleep 0.1
    done
    echo "nodes did not come up in 20 s; see $LOG" >&2; exit 1 ;;
  stop)
    [[ -f $PIDFILE ]] || { echo "not running" >&2; exit 0; }
    pid=$(cat "$PIDFILE")
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$PIDFILE"; echo "stopped" ;;
  *) echo "usage: $0 start N [inventory.yaml] | stop" >&2; exit 2 ;;
esac
