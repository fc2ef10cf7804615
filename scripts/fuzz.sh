#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into ./build-fuzz and
# runs each for $FUZZ_SECONDS (default 60) over a temporary copy of its
# committed corpus and regression inputs, so the repository is not modified.
# Exits non-zero when any target finds a crash, leak, timeout or OOM; the
# input that did it is kept in $FUZZ_ARTIFACTS (default build-fuzz/artifacts).
#
#   FUZZ_SECONDS=600 scripts/fuzz.sh            # all targets
#   scripts/fuzz.sh tokenizer                    # only the named ones
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
artifacts="${FUZZ_ARTIFACTS:-$build/artifacts}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf model tokenizer openai http grammar)

"$root/scripts/install-deps.sh" fuzz

if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DBONSAI_FUZZ=ON -DBONSAI_BUILD_TESTS=OFF -DBONSAI_BUILD_BENCHMARKS=OFF
fi
cmake --build "$build" --target "${targets[@]/#/fuzz_}"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"
failed=()
for t in "${targets[@]}"; do
  corpus="$work/$t"
  mkdir -p "$corpus"
  # Seeds and past crashers together (READMEs are not inputs).
  find "$root/fuzz/corpus/$t" "$root/fuzz/regressions/$t" -maxdepth 1 -type f ! -name '*.md' \
    -exec cp {} "$corpus/" \; 2>/dev/null || true
  echo "== fuzz_$t: ${seconds}s over $(ls "$corpus" | wc -l) inputs"
  if ! (cd "$work" && "$build/bin/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
        -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$corpus" 2>&1 |
        grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)'; exit "${PIPESTATUS[0]}"); then
    failed+=("$t")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing FAILED for: ${failed[*]} (inputs in $artifacts; add them to fuzz/regressions/)" >&2
  exit 1
fi
echo "fuzzing passed: ${targets[*]} (${seconds}s each)"
