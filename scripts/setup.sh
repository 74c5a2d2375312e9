#!/usr/bin/env bash
# One-shot setup for a fresh machine: system packages the tests need, then one venv (.venv) holding
# rlaunch (editable) plus the CPU training stack that simulated nodes run (torch, DeepSpeed, LLaMA-Factory).
# Idempotent: re-running only does what is missing. Usage: scripts/setup.sh [--no-apt | --demo]
#   --demo: only what `make demo` needs (torch and rlaunch: no system packages, no DeepSpeed, no LLaMA-Factory)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
VENV=${RLAUNCH_VENV:-$ROOT/.venv}
PY=${PYTHON:-python3}

log() { printf '[setup] %s\n' "$*" >&2; }

# --- system packages: sshd for simulated nodes, pdsh and rsync for the benchmarks, iproute2 for namespaces ---
if [[ "${1:-}" != "--no-apt" && "${1:-}" != "--demo" ]]; then
  need=()
  [[ -x /usr/sbin/sshd ]] || need+=(openssh-server)
  command -v pdsh >/dev/null || need+=(pdsh)
  command -v rsync >/dev/null || need+=(rsync)  # bench/sync.py's side by side
  command -v ip >/dev/null || need+=(iproute2)
  command -v unshare >/dev/null || need+=(util-linux)
  # a one-node Slurm for the ops tests (prolog/epilog/health check through real jobs)
  command -v slurmctld >/dev/null || need+=(slurmd slurmctld slurm-client munge)
  # the multi-node Slurm of tests/test_slurm_multinode.py counts job steps with sacct: slurmdbd on a MariaDB
  command -v slurmdbd >/dev/null || need+=(slurmdbd)
  command -v mariadbd >/dev/null || need+=(mariadb-server)
  # headless Chromium renders `rlaunch report --html` pages in a test (console errors, a screenshot)
  command -v chromium >/dev/null || need+=(chromium)
  if ((${#need[@]})); then
    if [[ $(id -u) -eq 0 ]]; then
      log "installing ${need[*]}"
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -qq
      apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
    else
      log "missing ${need[*]} (not root: SSH tests will be skipped)"
    fi
  fi
  mkdir -p /run/sshd 2>/dev/null || true
fi

# --- python environment ---
if [[ ! -x "$VENV/bin/python" ]]; then
  log "creating $VENV"
  "$PY" -m venv "$VENV"
fi
# This machine's pip config names a local index that may be absent: drop its per-package "ignored" warnings.
pip() { "$VENV/bin/python" -m pip -q --disable-pip-version-check "$@" 2> >(grep -v "^WARNING: Location" >&2); }
if [[ "${1:-}" == "--demo" ]]; then
  # The demo is a 2-node torchrun job on examples/local.yaml (local transport): torch and rlaunch's own
  # dependencies, nothing else. Estimates measured on a 2-core machine from a fresh clone (README).
  if ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    log "installing torch 2.13.0 (CPU wheel, ~50 s)"
    t0=$SECONDS
    pip install "torch==2.13.0"
    log "torch installed in $((SECONDS - t0)) s"
  fi
  if [[ ! -x "$VENV/bin/rlaunch" ]]; then
    log "installing rlaunch (editable) and its head-node dependencies (~10 s)"
    pip install -e "$ROOT"
  fi
  log "ready for the demo: $VENV/bin/rlaunch (\`make test\` installs the rest)"
  exit 0
fi
stamp="$VENV/.rlaunch-stack-v1"
if [[ ! -f "$stamp" ]]; then
  log "installing the CPU training stack (torch, deepspeed, llamafactory; ~1 min)"
  # torch first: 2.13.0 is the CPU wheel on local disk; anything else would pull a multi-GB CUDA build.
  pip install "torch==2.13.0"
  DS_BUILD_OPS=0 pip install "deepspeed==0.19.8"
  pip install "transformers==5.6.0" "datasets==4.0.0" "accelerate==1.11.0" "peft==0.18.1" "trl==0.24.0" \
    "omegaconf==2.4.0" "sentencepiece" "tiktoken" "protobuf" "fire" "scipy" "einops" "av" "pydantic" \
    "packaging" "pyyaml" "numpy<3" "pandas" "matplotlib"
  pip install --no-deps "llamafactory==0.9.5"
  touch "$stamp"
fi
# No librosa (LLaMA-Factory 0.9.5 does not require it; only its audio path would use it): it pulls scikit-learn,
# which transformers imports at module level whenever it is installed (generation/candidate_generator.py:
# `if is_sklearn_available(): from sklearn.metrics import roc_curve`): about a fifth of every LLaMA-Factory
# rank's import (`-X importtime`: sklearn.metrics 9.6 of 43.4 s under load). Venvs of an earlier setup drop it.
if "$VENV/bin/python" -c "import importlib.util as u, sys; sys.exit(u.find_spec('librosa') is None)" 2>/dev/null; then
  log "removing librosa and scikit-learn (unused; transformers would import scikit-learn in every rank)"
  "$VENV/bin/python" -m pip uninstall -y -q librosa scikit-learn
fi
# LLaMA-Factory imports torchaudio at module level (src/llamafactory/data/mm_plugin.py). PyPI's torchaudio 2.11.1
# (py3-none, torch>=2.11 through the stable ABI) installs beside torch 2.13 without pulling another torch, but its
# C++ extension is a CUDA build (needs libc10_cuda.so): on a CPU torch it cannot load. torchaudio treats an absent
# extension as "not built" (torchaudio/_extension/utils.py _load_lib returns False) and LLaMA-Factory's audio path
# (torchaudio.load via torchcodec, functional.resample) is Python: drop the CUDA-linked libraries. docs/facts.md.
if ! "$VENV/bin/python" -c "import llamafactory.train.tuner" 2>/dev/null; then
  log "installing torchaudio (LLaMA-Factory imports it)"
  pip install --no-deps "torchaudio==2.11.1"
  "$VENV/bin/python" - <<'PY'
import importlib.util, pathlib, torch
if torch.version.cuda is None and torch.version.hip is None:  # CPU torch: the CUDA-linked extension cannot load
    lib = pathlib.Path(importlib.util.find_spec("torchaudio").origin).parent / "lib"
    for so in lib.glob("*.so"):
        so.unlink()
PY
  "$VENV/bin/python" -c "import llamafactory.train.tuner" || { log "llamafactory does not import"; exit 1; }
fi
# DeepSpeed JIT-builds its CPU ops on first use (~60 s): build them once here, into the cache the tests use
# (tests/e2e_helpers.py TORCH_EXTENSIONS, one directory per interpreter prefix: asked, not computed again here).
ext="$("$VENV/bin/python" -c 'import sys; sys.path.insert(0, "tests"); from e2e_helpers import TORCH_EXTENSIONS; print(TORCH_EXTENSIONS)')"
if [[ ! -f "$ext/.rlaunch-warm" ]]; then
  log "building DeepSpeed CPU ops once (shm_comm, cpu_adam) into $ext"
  TORCH_EXTENSIONS_DIR="$ext" "$VENV/bin/python" -c "from deepspeed.ops.op_builder.cpu import ShareMemCommBuilder, CPUAdamBuilder; ShareMemCommBuilder().load(verbose=False); CPUAdamBuilder().load(verbose=False)" >/dev/null
  touch "$ext/.rlaunch-warm"
fi
# py-spy (a static binary in its wheel) dumps hung ranks' stacks; nodes find it beside their python.
[[ -x "$VENV/bin/py-spy" ]] || pip install "py-spy==0.4.3"
pip install -e "$ROOT[dev]"
log "ready: $VENV/bin/rlaunch"
