# shellcheck shell=bash
# Shared by slurm/rlaunch-prolog, slurm/rlaunch-epilog and rlaunch-cron (sourced, never run); the caller sets
# RL_OPS_ROOT (this directory). Keep it dependency-free: slurmd runs these
# scripts as root with an almost empty environment and no PATH (https://slurm.schedmd.com/prolog_epilog.html).

export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin${PATH:+:$PATH}

# Every drain we make carries this prefix, and we only ever resume nodes whose reason starts with it: a node an
# admin (or LBNL NHC, which does the same with "NHC:") drained stays drained until they resume it.
RLAUNCH_REASON_PREFIX="rlaunch:"

# Operators configure the scripts with shell assignments in /etc/default/rlaunch (see ops/default/rlaunch);
# RLAUNCH_DEFAULTS points elsewhere (tests, or a per-partition file).
rl_load_defaults() {
  local file=${RLAUNCH_DEFAULTS:-/etc/default/rlaunch}
  # shellcheck source=/dev/null
  [[ -r $file ]] && . "$file"
  RLAUNCH_SCONTROL=${RLAUNCH_SCONTROL:-scontrol}
  RLAUNCH_SINFO=${RLAUNCH_SINFO:-sinfo}
  RLAUNCH_LOG=${RLAUNCH_LOG:-/var/log/rlaunch/slurm.log}
  RL_NODE=${SLURMD_NODENAME:-$(hostname -s)}
}

rl_log() {
  local line msg="$*" job=${SLURM_JOB_ID:--}
  # Command lines and environments are a user's words: a newline or escape in them must not forge or hide a line
  # in root's log.
  msg=${msg//[[:cntrl:]]/?}
  job=${job//[[:cntrl:]]/?}
  line="$(date -u +%Y-%m-%dT%H:%M:%SZ) ${RL_TAG:-rlaunch} node=${RL_NODE:-?} job=$job $msg"
  printf '%s\n' "$line" >&2
  if mkdir -p "$(dirname "$RLAUNCH_LOG")" 2>/dev/null; then printf '%s\n' "$line" >>"$RLAUNCH_LOG" 2>/dev/null; fi
  if [[ ${RLAUNCH_SYSLOG:-1} == 1 ]] && command -v logger >/dev/null; then
    logger -t "${RL_TAG:-rlaunch}" -- "$msg" 2>/dev/null || true
  fi
}

# Prints "<state>|<reason>" for this node, e.g. "drained|rlaunch: validate failed ...", "idle|none".
# sinfo -N prints one line per partition the node is in; they agree on state and reason, so take the first.
rl_node_state() {
  "$RLAUNCH_SINFO" -h -N -n "$RL_NODE" -o '%T|%E' 2>/dev/null | head -n 1
}

rl_is_drained() { [[ ${1%%|*} == *drain* ]]; }
rl_reason_is_ours() { [[ ${1#*|} == "$RLAUNCH_REASON_PREFIX"* ]]; }

# Drain with an rlaunch: reason unless someone else already drained the node: their reason is the one the
# admin needs to see, so we neither overwrite it nor later resume it.
rl_drain() {
  local reason="$RLAUNCH_REASON_PREFIX $*" current
  reason=${reason//[$'\n\r"']/ }
  current=$(rl_node_state)
  if rl_is_drained "$current" && ! rl_reason_is_ours "$current"; then
    rl_log "already drained by others (${current#*|}); not overwriting with: $reason"
    return 0
  fi
  rl_log "draining: $reason"
  "$RLAUNCH_SCONTROL" update nodename="$RL_NODE" state=drain reason="${reason:0:250}" ||
    rl_log "scontrol drain failed (slurmd still drains the node because we exit non-zero)"
}

# Resume only a node that is drained with our prefix (the optional "healthy again" path of the prolog).
rl_resume_if_ours() {
  local current
  current=$(rl_node_state)
  if rl_is_drained "$current" && rl_reason_is_ours "$current"; then
    rl_log "healthy again; resuming (was: ${current#*|})"
    "$RLAUNCH_SCONTROL" update nodename="$RL_NODE" state=resume || rl_log "scontrol resume failed"
  fi
}

# The interpreter of the installed rlaunch (its venv has prometheus_client); plain python3 otherwise.
rl_python() {
  local exe shebang
  if [[ -n ${RLAUNCH_PYTHON:-} ]]; then echo "$RLAUNCH_PYTHON"; return; fi
  exe=$(command -v rlaunch 2>/dev/null) && IFS= read -r shebang <"$exe" && [[ $shebang == '#!/'* ]] &&
    [[ -x ${shebang#\#!} ]] && { echo "${shebang#\#!}"; return; }
  echo python3
}

# Optional node_exporter textfile (RLAUNCH_TEXTFILE_DIR); a metrics problem never fails the caller.
rl_textfile() {
  [[ -n ${RLAUNCH_TEXTFILE_DIR:-} ]] || return 0
  "$(rl_python)" "$RL_OPS_ROOT/rlaunch_ops.py" textfile --dir "$RLAUNCH_TEXTFILE_DIR" "$@" 2>&1 |
    while IFS= read -r l; do rl_log "metrics: $l"; done
  return 0
}
