#!/usr/bin/env bash
# Runs webui.test.mjs: the chat page of `bonsai serve` in Debian's Chromium,
# headless, driven by playwright-core (pinned in package-lock.json; it never
# downloads a browser). The test starts its own servers.
# usage: run.sh BONSAI_BIN MODEL.gguf WORK_DIR
# Exit 77 (ctest: skipped) when node/npm, Chromium or the npm package is
# unavailable, saying which.
set -euo pipefail

if [[ $# -ne 3 ]]; then
  echo "usage: $0 BONSAI_BIN MODEL.gguf WORK_DIR" >&2
  exit 2
fi
bin=$1 model=$2
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$3"
work=$(cd "$3" && pwd)

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  echo "skipped: node/npm not installed"
  exit 77
fi
chromium=${BONSAI_CHROMIUM:-/usr/bin/chromium}
if [[ ! -x $chromium ]]; then
  echo "skipped: no Chromium at $chromium (Debian package chromium)"
  exit 77
fi

# Install the pinned package; again only when the lock file changed.
cp "$src/package.json" "$src/package-lock.json" "$src/webui.test.mjs" "$work/"
if [[ ! -d $work/node_modules/playwright-core ]] ||
   ! cmp -s "$work/package-lock.json" "$work/.installed-lock.json"; then
  rm -f "$work/.installed-lock.json"
  if ! (cd "$work" && npm ci --no-audit --no-fund --loglevel=error); then
    echo "skipped: npm could not install playwright-core"
    exit 77
  fi
  cp "$work/package-lock.json" "$work/.installed-lock.json"
fi

cd "$work"
BONSAI_BIN=$bin BONSAI_MODEL=$model BONSAI_CHROMIUM=$chromium BONSAI_WORK=$work \
  exec node --test --test-concurrency=1 webui.test.mjs
