#!/usr/bin/env bash
# The schema corpus (corpus.mjs: zod 4 shapes turned into JSON Schema by
# z.toJSONSchema here, Pydantic v2 schemas in pydantic/) against
# `bonsai serve`: every schema accepted, every reply valid under Ajv.
# usage: run.sh BONSAI_BIN MODEL.gguf WORK_DIR [SERVE_ARGS...]
# Exit 77 (ctest: skipped) when node/npm or the npm packages are unavailable.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../npm_test_setup.sh
source "$src/../npm_test_setup.sh"
read_args "$@"
require_node
install_pinned "$src" "$work" zod "$src"/*.mjs
rm -rf "$work/pydantic"
cp -r "$src/pydantic" "$work/pydantic"
serve_args=("${more[@]}")
[[ ${#serve_args[@]} -gt 0 ]] || serve_args=(--backend cpu)
# Four requests at a time: the model is tiny, the grammar's masks are most
# of the work.
start_bonsai_serve --parallel 4 -c 2048 "${serve_args[@]}"
set +e
(cd "$work" && BONSAI_URL=$url/v1 BONSAI_MODEL_ID=$(basename "$model" .gguf) \
  CORPUS_CONCURRENCY=4 node --test corpus.test.mjs)
status=$?
set -e
exit "$status"
