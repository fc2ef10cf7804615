#!/usr/bin/env bash
# Runs a test file of the official OpenAI JS client against `bonsai serve`.
# usage: run.sh BONSAI_BIN MODEL.gguf WORK_DIR [TEST.mjs [SERVE_ARGS...]]
# TEST.mjs defaults to client.test.mjs, SERVE_ARGS to the CPU plugin's exact
# kernels; the rest (the pinned install, the server, $BONSAI_FAKE_REPLY for
# the scripted fake plugin, exit 77 without node) is npm_client_test.sh's.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ $# -lt 3 ]]; then
  echo "usage: $0 BONSAI_BIN MODEL.gguf WORK_DIR [TEST.mjs [SERVE_ARGS...]]" >&2
  exit 2
fi
exec bash "$src/../npm_client_test.sh" openai "$src" "$1" "$2" "$3" "${4:-client.test.mjs}" "${@:5}"
