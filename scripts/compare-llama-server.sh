#!/usr/bin/env bash
# Runs the OpenAI-client suites of `bonsai serve` (tests/server/openai:
# client.test.mjs, structured.test.mjs) against mainline llama-server on the
# same model file, to see where the two differ (docs/server.md, "Compared with
# other servers"). Not part of ctest: llama-server is built by hand
# (../shared/peers).
# usage: scripts/compare-llama-server.sh LLAMA_SERVER MODEL.gguf [WORK_DIR]
set -euo pipefail

[[ $# -ge 2 ]] || { echo "usage: $0 LLAMA_SERVER MODEL.gguf [WORK_DIR]" >&2; exit 2; }
server=$1
model=$2
work=${3:-$(mktemp -d)}
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../tests/server/openai" && pwd)
[[ -x $server ]] || { echo "$server: not an executable" >&2; exit 2; }
[[ -f $model ]] || { echo "$model: no such model file" >&2; exit 2; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "node and npm are needed" >&2; exit 2; }

mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src/client.test.mjs" "$src/structured.test.mjs" \
  "$work/"
(cd "$work" && npm ci --no-audit --no-fund --loglevel=error)

port=18765
"$server" -m "$model" --port "$port" --jinja -c 4096 -np 2 -t 2 >"$work/llama-server.log" 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && break
  sleep 0.2
done

for suite in client.test.mjs structured.test.mjs; do
  echo "== $suite against llama-server"
  (cd "$work" && BONSAI_URL="http://127.0.0.1:$port/v1" BONSAI_API_KEY= \
    BONSAI_MODEL_ID=$(basename "$model" .gguf) node --test "$suite" 2>&1) |
    grep -E '^(not )?ok|^  error:' || true
done
