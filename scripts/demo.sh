#!/usr/bin/env bash
# The README's demo: builds the bonsai program and its plugins (nothing
# else), makes (once) a synthetic model of the
# Bonsai 1.7B shape in Q1_0 with the full Qwen3 vocabulary, and streams a
# chat reply from it with the best backend found (CUDA, else CPU).
#
# The weights are random, so the text is gibberish; the speed is real: the
# model moves the same bytes and does the same work as the real one. The
# stats line on stderr shows the load time and tokens per second.
#
# Usage: scripts/demo.sh [more `bonsai run` flags, e.g. --temp 0 -t 8]
# Environment: BONSAI_BUILD_DIR (default ./build), BONSAI_DEMO_PROMPT,
# BONSAI_DEMO_TOKENS (default 64), BONSAI_DEMO_BACKEND (default auto).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_BUILD_DIR:-$root/build}"
model="$root/models/demo-1.7b-q1_0.gguf"
prompt="${BONSAI_DEMO_PROMPT:-Explain in a few sentences why 1-bit weights make a language model fast.}"
tokens="${BONSAI_DEMO_TOKENS:-64}"
backend="${BONSAI_DEMO_BACKEND:-auto}"

# Only what the demo runs: the program, its plugins and bonsai-gguf (the
# tests and benchmarks come with ./scripts/test.sh, in the same folder).
"$root/scripts/install-deps.sh" program
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBONSAI_BUILD_TESTS=OFF -DBONSAI_BUILD_BENCHMARKS=OFF
fi
cmake --build "$build" --target bonsai bonsai_cpu bonsai_cuda bonsai-gguf

if [ ! -f "$model" ]; then
  echo "demo: making $model (random 1.7B-shape Q1_0 weights, Qwen3 vocabulary)" >&2
  mkdir -p "$root/models"
  "$build/bin/bonsai-gguf" make-model --preset 1.7b --type q1_0 \
    --vocab "$root/tests/data/qwen3-vocab.gguf" -o "$model"
fi

exec "$build/bin/bonsai" run -m "$model" --backend "$backend" --chat -p "$prompt" -n "$tokens" "$@"
