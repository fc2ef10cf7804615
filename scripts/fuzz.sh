#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) into ./build-fuzz and
# runs each for $FUZZ_SECONDS (default 60) over a temporary copy of its
# committed corpus and regression inputs, so the repository is not modified;
# $FUZZ_JOBS targets (default: one per core) run at a time.
# Exits non-zero when any target finds a crash, leak, timeout or OOM; the
# input that did it is kept in $FUZZ_ARTIFACTS (default build-fuzz/artifacts).
#
#   FUZZ_SECONDS=600 scripts/fuzz.sh            # all targets
#   scripts/fuzz.sh tokenizer                    # only the named ones
#   scripts/fuzz.sh --build-only                 # build, run nothing
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-60}"
artifacts="${FUZZ_ARTIFACTS:-$build/artifacts}"
build_only=0
if [ "${1:-}" = "--build-only" ]; then
  build_only=1
  shift
fi
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(gguf model tokenizer openai apis http grammar)
jobs="${FUZZ_JOBS:-$(nproc)}"
if ! [[ "$seconds" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: FUZZ_SECONDS must be a whole number of 1 or more, not '$seconds'" >&2
  exit 2
fi
if ! [[ "$jobs" =~ ^[1-9][0-9]*$ ]]; then
  echo "fuzz.sh: FUZZ_JOBS must be a whole number of 1 or more, not '$jobs'" >&2
  exit 2
fi

"$root/scripts/install-deps.sh" fuzz

# -O1 -g1, as libFuzzer's own instructions build: a fraction of -O3's compile
# time, and a crash report names file and line.
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DBONSAI_FUZZ=ON -DBONSAI_BUILD_TESTS=OFF -DBONSAI_BUILD_BENCHMARKS=OFF
fi
cmake --build "$build" --target "${targets[@]/#/fuzz_}"
[ "$build_only" = 1 ] && exit 0

work="$(mktemp -d)"
# Fuzzers still running when the script is stopped go with it.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
mkdir -p "$artifacts"

# One target over its own copy of the corpus; output and exit status go to
# files, so targets can run side by side and still print whole.
fuzz_one() {
  local t="$1" corpus="$work/$1"
  mkdir -p "$corpus"
  # Seeds and past crashers together (READMEs are not inputs).
  find "$root/fuzz/corpus/$t" "$root/fuzz/regressions/$t" -maxdepth 1 -type f ! -name '*.md' \
    -exec cp {} "$corpus/" \; 2>/dev/null || true
  local rc=0
  {
    echo "== fuzz_$t: ${seconds}s over $(ls "$corpus" | wc -l) inputs"
    (cd "$work" && "$build/bin/fuzz_$t" -max_total_time="$seconds" -rss_limit_mb=2048 \
      -timeout=10 -print_final_stats=1 -artifact_prefix="$artifacts/$t-" "$corpus" 2>&1 |
      grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)'; exit "${PIPESTATUS[0]}") || rc=$?
  } >"$work/$t.log" 2>&1
  echo "$rc" >"$work/$t.rc"
}

# Each fuzzer uses one core: as many run at once as there are cores
# ($FUZZ_JOBS to choose), each still for its full $FUZZ_SECONDS.
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$jobs" ]; do wait -n || true; done
  fuzz_one "$t" &
done
wait
failed=()
for t in "${targets[@]}"; do
  cat "$work/$t.log" 2>/dev/null || echo "== fuzz_$t: no output (the run did not start)"
  [ "$(cat "$work/$t.rc" 2>/dev/null)" = 0 ] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzzing FAILED for: ${failed[*]} (inputs in $artifacts; add them to fuzz/regressions/)" >&2
  exit 1
fi
echo "fuzzing passed: ${targets[*]} (${seconds}s each)"
