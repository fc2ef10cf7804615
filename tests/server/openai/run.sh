#!/usr/bin/env bash
# Runs a test file of the official OpenAI JS client against `bonsai serve`.
# usage: run.sh BONSAI_BIN MODEL.gguf WORK_DIR [TEST.mjs [SERVE_ARGS...]]
# TEST.mjs defaults to client.test.mjs, SERVE_ARGS to the CPU plugin's exact
# kernels. With $BONSAI_FAKE_REPLY set (agent.test.mjs, the scripted fake
# plugin), the model's reply is that text, and $BONSAI_FAKE_REPLY_AFTER (text)
# /$BONSAI_FAKE_TRIGGER (text) the reply once the prompt holds the trigger:
# each is turned into the plugin's token ids here.
# Exit 77 (ctest: skipped) when node/npm or the npm package is unavailable.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../npm_test_setup.sh
source "$src/../npm_test_setup.sh"
read_args "$@"
require_node
# (a) Install the pinned client.
test_file=${more[0]:-client.test.mjs}
serve_args=("${more[@]:1}")
[[ ${#serve_args[@]} -gt 0 ]] || serve_args=(--backend cpu --backend-options kernels=reference)
install_pinned "$src" "$work" openai "$src/$test_file"
key=test-key

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

# (b), (c), (e): the server on a free port, healthy, stopped on exit.
start_bonsai_serve --parallel 2 -c 512 --api-key "$key" "${serve_args[@]}"

# (d) The test file sits next to node_modules so `import "openai"` resolves.
set +e
(cd "$work" && BONSAI_URL=$url/v1 BONSAI_API_KEY=$key \
  BONSAI_MODEL_ID=$(basename "$model" .gguf) node --test "$test_file")
status=$?
set -e
exit "$status"
