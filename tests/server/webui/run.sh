#!/usr/bin/env bash
# Runs webui.test.mjs: the chat page of `bonsai serve` in Debian's Chromium,
# headless, driven by playwright-core (pinned in package-lock.json; it never
# downloads a browser). The test starts its own servers.
# usage: run.sh BONSAI_BIN MODEL.gguf WORK_DIR
# Exit 77 (ctest: skipped) when node/npm, Chromium or the npm package is
# unavailable, saying which.
set -euo pipefail

src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../npm_test_setup.sh
source "$src/../npm_test_setup.sh"
read_args "$@"
require_node
chromium=${BONSAI_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
  echo "skipped: no Chromium at $chromium (Debian package chromium)"
  exit 77
fi
install_pinned "$src" "$work" playwright-core "$src/webui.test.mjs"

cd "$work"
BONSAI_BIN=$bin BONSAI_MODEL=$model BONSAI_CHROMIUM=$chromium BONSAI_WORK=$work \
  exec node --test --test-concurrency=1 webui.test.mjs
