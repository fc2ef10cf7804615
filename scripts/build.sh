#!/usr/bin/env bash
# Configures (once) and builds bonsai, its tests and benchmarks into ./build
# (or $BONSAI_BUILD_DIR). A folder the demo configured for the program alone
# is switched to the full build here; what the demo built is not rebuilt.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_BUILD_DIR:-$root/build}"
"$root/scripts/install-deps.sh"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
elif grep -qE '^BONSAI_BUILD_(TESTS|BENCHMARKS):BOOL=OFF' "$build/CMakeCache.txt"; then
  cmake -S "$root" -B "$build" -DBONSAI_BUILD_TESTS=ON -DBONSAI_BUILD_BENCHMARKS=ON "$@"
fi
cmake --build "$build"
