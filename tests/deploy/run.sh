#!/usr/bin/env bash
# ctest deploy.manifests: validates deploy/'s manifests (manifests.test.mjs)
# with the pinned npm packages, and checks the metrics they read against the
# /metrics page of a running `bonsai serve`.
# usage: run.sh BONSAI_BIN MODEL.gguf WORK_DIR     (exit 77 without node/npm)
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$src/../server/npm_test_setup.sh"
read_args "$@"
require_node
install_pinned "$src" "$work" kubernetes-models "$src/validate.mjs" "$src/manifests.test.mjs"
rm -rf "$work/schemas" && cp -r "$src/schemas" "$work/schemas"
start_bonsai_serve --parallel 2
node -e 'fetch(process.argv[1]).then((r) => r.text()).then((t) => process.stdout.write(t))' \
  "$url/metrics" >"$work/metrics.txt"
BONSAI_DEPLOY_DIR="$src/../../deploy" BONSAI_METRICS_PAGE="$work/metrics.txt" node --test "$work/manifests.test.mjs" && status=0
