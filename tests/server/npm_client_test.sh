#!/usr/bin/env bash
# Runs a test file of an official npm client (openai, @anthropic-ai/sdk,
# ollama) against the real `bonsai serve` program.
# usage: npm_client_test.sh PACKAGE SUITE_DIR BONSAI_BIN MODEL.gguf WORK_DIR TEST.mjs
#                           [SERVE_ARGS...]
# SUITE_DIR holds the pinned package.json and package-lock.json and TEST.mjs;
# SERVE_ARGS default to the CPU plugin's exact kernels. The test sees
# $BONSAI_BASE_URL (http://127.0.0.1:PORT), $BONSAI_URL (the same with /v1),
# $BONSAI_API_KEY and $BONSAI_MODEL_ID. With $BONSAI_FAKE_REPLY set (the
# scripted fake plugin), the model's reply is that text, and
# $BONSAI_FAKE_REPLY_AFTER the reply once the prompt holds
# $BONSAI_FAKE_TRIGGER: each is turned into the plugin's token ids here.
# Exit 77 (ctest: skipped) when node/npm or the npm package is unavailable.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=npm_test_setup.sh
source "$here/npm_test_setup.sh"
if [[ $# -lt 6 ]]; then
  echo "usage: $0 PACKAGE SUITE_DIR BONSAI_BIN MODEL.gguf WORK_DIR TEST.mjs [SERVE_ARGS...]" >&2
  exit 2
fi
package=$1 suite=$2
shift 2
read_args "$@"
require_node
# (a) Install the pinned client.
test_file=${more[0]}
serve_args=("${more[@]:1}")
[[ ${#serve_args[@]} -gt 0 ]] || serve_args=(--backend cpu --backend-options kernels=reference)
install_pinned "$suite" "$work" "$package" "$suite/$test_file"

# The scripted fake plugin's replies, as token ids of the model's vocabulary.
ids_of() { "$(dirname "$bin")/bonsai-gguf" tokenize "$model" --text "$1"; }
if [[ -n ${BONSAI_FAKE_REPLY:-} ]]; then
  BONSAI_FAKE_SCRIPT=$(ids_of "$BONSAI_FAKE_REPLY")
  export BONSAI_FAKE_SCRIPT
  if [[ -n ${BONSAI_FAKE_TRIGGER:-} ]]; then
    BONSAI_FAKE_SCRIPT_WHEN="$(ids_of "$BONSAI_FAKE_TRIGGER")/$(ids_of "$BONSAI_FAKE_REPLY_AFTER")"
    export BONSAI_FAKE_SCRIPT_WHEN
  fi
fi

# (b) Start the server on a free port; it reports the bound port on stderr.
log=$work/server.log
key=test-key
# Created here, not by the background job's redirection: the port loop below
# may read it before that job has run.
: >"$log"
"$bin" serve -m "$model" --port 0 --parallel 2 -c 512 --api-key "$key" "${serve_args[@]}" \
  >"$log" 2>&1 &
pid=$!
status=1

stop_server() {
  # (e) SIGTERM, then give running requests up to 15 s before SIGKILL.
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 150); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "server did not stop within 15 s of SIGTERM; killing it" >&2
      kill -KILL "$pid" 2>/dev/null || true
      status=1
    fi
  fi
  wait "$pid" 2>/dev/null || true
  if [[ $status -ne 0 ]]; then
    echo "---- server log ($log) ----" >&2
    cat "$log" >&2 || true
  fi
  exit "$status"
}
trap stop_server EXIT
trap 'exit 1' INT TERM

port=
for _ in $(seq 100); do
  port=$(sed -n 's|^bonsai serve: listening on http://[^ ]*:\([0-9][0-9]*\) .*|\1|p' "$log" | head -n1)
  [[ -n $port ]] && break
  kill -0 "$pid" 2>/dev/null || { echo "server exited before listening" >&2; exit 1; }
  sleep 0.1
done
[[ -n $port ]] || { echo "no 'listening on' line within 10 s" >&2; exit 1; }

# (c) Wait for the model to load (/health is 503 until then). Node's fetch,
# since curl may be missing; stop early if the server dies.
url=http://127.0.0.1:$port
if ! node -e '
  const [url, pid] = process.argv.slice(1);
  const end = Date.now() + 60000;
  (async () => {
    for (;;) {
      try { if ((await fetch(url)).status === 200) process.exit(0); } catch {}
      try { process.kill(Number(pid), 0); } catch { process.exit(2); }
      if (Date.now() > end) process.exit(1);
      await new Promise((r) => setTimeout(r, 200));
    }
  })();' "$url/health" "$pid"; then
  echo "server at $url never became healthy" >&2
  exit 1
fi

# (d) The test file sits next to node_modules so that its imports resolve.
set +e
(cd "$work" && BONSAI_BASE_URL=$url BONSAI_URL=$url/v1 BONSAI_API_KEY=$key \
  BONSAI_MODEL_ID=$(basename "$model" .gguf) node --test "$test_file")
status=$?
set -e
exit "$status"
