"""Find the latest COMPLETE checkpoint under a directory; run on a node as `python -c <this file> DIR WORLD_SIZE`.

Standard library only. Recognises, newest step first:
- HF Trainer / LLaMA-Factory `checkpoint-N/` directories: complete when `trainer_state.json` exists (the Trainer
  writes it last) and, for DeepSpeed runs, every rank's shard exists in the `global_stepN` tag dir inside;
- DeepSpeed tag directories (`global_stepN/`, or whatever `latest` names): complete only when every rank's
  `zero_pp_rank_R_mp_rank_00_optim_states.pt` exists — DeepSpeed writes `latest` before all shards do;
- the rlaunch example convention: a `latest` file naming a tag directory that holds `state.pt`.
Prints {"latest": PATH or null, "skipped": [[PATH, why], ...]}.
"""

import json
import os
import re
import sys

if __name__ == "__main__":  # on a node: push.py (the run directory's path rule) is sent with this script
    import push  # (launcher/run/loop.py find_checkpoint, nodecall.with_modules)
else:  # imported by the head or tests
    from launcher.node import push


def deepspeed_shards_missing(tag_dir, world_size):
    names = os.listdir(tag_dir)
    if not any(n.endswith("_optim_states.pt") for n in names):
        return None  # not a ZeRO tag dir
    missing = [r for r in range(world_size) if f"zero_pp_rank_{r}_mp_rank_00_optim_states.pt" not in names]
    return missing


def step_of(name):
    m = re.search(r"(\d+)$", name)
    return int(m.group(1)) if m else -1


def check_dir(path, world_size):
    """None when complete, else the reason it is not."""
    if os.path.basename(path).startswith("checkpoint-"):
        if not os.path.isfile(os.path.join(path, "trainer_state.json")):
            return "no trainer_state.json (save interrupted)"
        # HF Trainer saves each process's RNG state last (after DeepSpeed's closing barrier, so possibly after
        # trainer_state.json): rng_state_R.pth per rank, rng_state.pth for one process. Without them a resume
        # runs, but no longer reproduces the uninterrupted run.
        wanted = ["rng_state.pth"] if world_size == 1 else [f"rng_state_{r}.pth" for r in range(world_size)]
        missing = [name for name in wanted if not os.path.isfile(os.path.join(path, name))]
        if missing:
            return f"RNG state missing: {', '.join(missing)}"
    for sub in [path] + [os.path.join(path, d) for d in sorted(os.listdir(path))]:
        if os.path.isdir(sub):
            missing = deepspeed_shards_missing(sub, world_size)
            if missing:
                return f"DeepSpeed shards missing for ranks {missing} in {os.path.basename(sub)}"
    return None


def find(root, world_size):
    skipped = []
    if not os.path.isdir(root):
        return None, skipped
    latest_file = os.path.join(root, "latest")
    candidates = [
        os.path.join(root, d)
        for d in os.listdir(root)
        if os.path.isdir(os.path.join(root, d)) and not d.startswith(".") and step_of(d) >= 0
    ]
    candidates.sort(key=lambda p: step_of(os.path.basename(p)), reverse=True)
    if os.path.isfile(latest_file):
        with open(latest_file) as f:
            tag = f.read().strip()
        tagged = os.path.join(root, tag)
        if tagged in candidates:  # the tag named by `latest` first, then older ones
            candidates.remove(tagged)
            candidates.insert(0, tagged)
    for path in candidates:
        why = check_dir(path, world_size)
        if why is None:
            return path, skipped
        skipped.append([path, why])
    return None, skipped


if __name__ == "__main__":
    # A checkpoint another user can write is code we would run (torch.load unpickles it into the resumed job): the
    # rule push.py applies to run directories (docs/security.md) applies to the checkpoint directory too.
    refused = push.unsafe_path(sys.argv[1])
    if refused:
        print(json.dumps({"latest": None, "skipped": [], "refused": refused}))
        sys.exit(0)
    latest, skipped = find(sys.argv[1], int(sys.argv[2]))
    print(json.dumps({"latest": latest, "skipped": skipped}))
