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

# (b), (c), (e): the server on a free port, healthy, stopped on exit.
key=test-key
start_bonsai_serve --parallel 2 -c 512 --api-key "$key" "${serve_args[@]}"

# (d) The test file sits next to node_modules so that its imports resolve.
set +e
(cd "$work" && BONSAI_BASE_URL=$url BONSAI_URL=$url/v1 BONSAI_API_KEY=$key \
  BONSAI_MODEL_ID=$(basename "$model" .gguf) node --test "$test_file")
status=$?
set -e
exit "$status"
