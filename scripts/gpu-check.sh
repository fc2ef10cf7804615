#!/usr/bin/env bash
# The one-command GPU check of the CUDA plugin. Runs every CUDA test, the
# plugin conformance and golden suites with the CUDA plugin, compute-sanitizer,
# a cold and a warm JIT, the device's copy bandwidth and `bonsai bench` on the
# real model shapes, then prints a summary table. Each step has its own time
# limit, so one hang costs only its step; the whole check fits in 10 minutes
# on an H100.
#
# Usage (from the repository root):
#   scripts/gpu-check.sh            on a GPU machine, with the bundle of
#                                   scripts/gpu-bundle.sh in ./.gpu (or a
#                                   build in $BONSAI_BUILD_DIR)
#   scripts/gpu-check.sh --fake     the same script against the fake driver of
#                                   the build (no GPU: CI), on the tiny models
# Environment: BONSAI_BUILD_DIR, OUT (logs and summary go there when set,
# else to BUILD/gpu-check), GPU_CHECK_SHAPES (default "1.7b 8b"),
# GPU_CHECK_TYPES (default "q1_0 q2_0"), GPU_CHECK_REPS (default 3).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mode=gpu
[ "${1:-}" = "--fake" ] && mode=fake

if [ -n "${BONSAI_BUILD_DIR:-}" ]; then
  build="$BONSAI_BUILD_DIR"
elif [ -x "$root/.gpu/bin/bonsai" ]; then
  build="$root/.gpu"
else
  build="$root/build"
fi
out="${OUT:-$build/gpu-check}"
logs="$out/logs"
mkdir -p "$logs"
summary="$out/summary.txt"
: >"$summary"
export LD_LIBRARY_PATH="$build/lib:$build/syslib:${LD_LIBRARY_PATH:-}"
export BONSAI_CACHE_DIR="$out/cache"
data="$root/tests/data"
bin="$build/bin"
plugin="$build/lib/bonsai/plugins/libbonsai_cuda.so"
export BONSAI_PLUGIN="$plugin"
reps="${GPU_CHECK_REPS:-3}"

# Test binaries name tests/data and the plugin folder by the absolute paths
# of the build they came from; a bundle built elsewhere finds them through
# links made here (only where nothing exists at those paths yet).
link_build_paths() {
  local origin
  origin="$(strings "$bin/test_golden" | grep -m1 -o '/[^"]*/tests/data' | sed 's,/tests/data$,,')"
  if [ -n "$origin" ] && [ "$origin" != "$root" ] && [ ! -e "$origin" ]; then
    mkdir -p "$(dirname "$origin")" && ln -s "$root" "$origin"
  fi
  if [ -n "$origin" ] && [ ! -e "$root/build" ] && [ "$build" != "$root/build" ]; then
    ln -s "$build" "$root/build"
  fi
}

now() { date +%s.%N; }

# step NAME LIMIT_S CMD...: runs CMD with a time limit, logs to logs/NAME.log
# and records the result in the summary.
step() {
  local name="$1" limit="$2"
  shift 2
  local start rc
  start=$(now)
  echo "=== $name: $*" >"$logs/$name.log"
  timeout --kill-after=5 "$limit" "$@" >>"$logs/$name.log" 2>&1
  rc=$?
  local secs
  secs=$(awk -v a="$start" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }')
  local verdict=ok
  if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
    verdict="TIMEOUT(${limit}s)"
  elif [ $rc -eq 77 ]; then
    verdict=skipped
  elif [ $rc -ne 0 ]; then
    verdict="FAIL(rc=$rc)"
  fi
  printf '%-28s %-14s %7ss  %s\n' "$name" "$verdict" "$secs" "$(tail_note "$name")" | tee -a "$summary"
}

# A one-line digest of a step's log: the gtest totals, or nothing.
tail_note() {
  local log="$logs/$1.log"
  local passed failed skipped
  passed=$(grep -o '\[  PASSED  \] [0-9]* test' "$log" | grep -o '[0-9]*' | tail -1)
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z]' "$log")
  skipped=$(grep -c '^\[  SKIPPED \] [A-Za-z]' "$log")
  if [ -n "$passed" ] || [ "$failed" -gt 0 ]; then
    echo "passed ${passed:-0}, failed $failed, skipped $skipped"
  fi
}

section() { echo "## $*" | tee -a "$summary"; }

if [ "$mode" = fake ]; then
  export BONSAI_CUDA_DRIVER="$build/tests/cuda/fake_driver/libbonsai_fake_cuda.so"
  [ -f "$BONSAI_CUDA_DRIVER" ] || BONSAI_CUDA_DRIVER="$build/lib/libbonsai_fake_cuda.so"
  [ -f "$BONSAI_CUDA_DRIVER" ] || { echo "gpu-check: no fake driver in $build" >&2; exit 1; }
fi
link_build_paths

section "device ($mode)"
{
  if [ "$mode" = gpu ]; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem \
      --format=csv,noheader 2>&1
    command -v nvcc >/dev/null && nvcc --version | tail -2
  else
    echo "fake driver: $BONSAI_CUDA_DRIVER"
  fi
  uname -r
  date -u +%FT%TZ
} | tee -a "$summary"

tiny="$data/tiny-q1.gguf"
run_tiny() { "$bin/bonsai" run -m "$tiny" --backend cuda -p "The quick brown fox" -n 8 --temp 0 "$@"; }

section "plugin, JIT and cache"
step backends 60 "$bin/bonsai" backends
rm -rf "$BONSAI_CACHE_DIR"
step jit_cold 300 env BONSAI_LOG_LEVEL=debug "$bin/bonsai" run -m "$tiny" --backend cuda \
  -p "The quick brown fox" -n 8 --temp 0
step jit_warm 300 env BONSAI_LOG_LEVEL=debug "$bin/bonsai" run -m "$tiny" --backend cuda \
  -p "The quick brown fox" -n 8 --temp 0
if grep -q "NVRTC compile" "$logs/jit_warm.log"; then
  echo "jit_warm: NVRTC compiled again: the disk cache was not used" | tee -a "$summary"
fi
grep -h "NVRTC compile\|load:\|prompt\|generation" "$logs/jit_cold.log" "$logs/jit_warm.log" \
  >>"$summary" 2>/dev/null
step auto_picks_cuda 120 bash -c "BONSAI_LOG_LEVEL=info '$bin/bonsai' run -m '$tiny' -p hi -n 2 \
  --temp 0 2>&1 | tee /dev/stderr | grep -q \"using .*libbonsai_cuda\""

if [ "$mode" = fake ]; then
  section "fake driver: end to end on the tiny model"
  step bench_tiny 600 "$bin/bonsai" bench -m "$tiny" --backend cuda -p 16 -n 4 -r 1
  cat "$out/summary.txt" >/dev/null
  grep '^|' "$logs/bench_tiny.log" | tee -a "$summary"
  echo "gpu-check (fake driver): summary in $summary"
  ! grep -q 'FAIL\|TIMEOUT' "$summary"
  exit $?
fi

# Real GPU from here on. Model files are made in the background meanwhile.
models="${GPU_CHECK_MODELS:-/tmp/bonsai-models}"
mkdir -p "$models"
shapes="${GPU_CHECK_SHAPES:-1.7b 8b}"
types="${GPU_CHECK_TYPES:-q1_0 q2_0}"
(
  for s in $shapes; do
    for t in $types; do
      f="$models/$s-$t.gguf"
      [ -f "$f" ] || "$bin/bonsai-gguf" make-model --preset "$s" --type "$t" \
        --vocab "$data/qwen3-vocab.gguf" -o "$f.tmp" && mv "$f.tmp" "$f"
    done
  done
) >"$logs/make_models.log" 2>&1 &
models_pid=$!

section "tests"
step test_cuda 180 "$bin/test_cuda"
step conformance 300 "$bin/test_conformance"
step golden 240 "$bin/test_golden"
grep -h '^\[ golden' "$logs/golden.log" >>"$summary" 2>/dev/null

section "compute-sanitizer (tiny-q1: prefill, then decode through the graph)"
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    step "sanitizer_$tool" 240 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$bin/bonsai" run -m "$tiny" --backend cuda -p "The quick brown fox" -n 6 --temp 0
    grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$logs/sanitizer_$tool.log" >>"$summary"
  done
else
  echo "compute-sanitizer: skipped: not installed" | tee -a "$summary"
fi

section "copy bandwidth (device to device, bytes read + written)"
step membw 120 python3 -c '
import torch
n = 1 << 30
a = torch.empty(n, dtype=torch.uint8, device="cuda"); b = torch.empty_like(a)
for _ in range(3): b.copy_(a)
torch.cuda.synchronize()
times = []
for _ in range(20):
    s = torch.cuda.Event(enable_timing=True); e = torch.cuda.Event(enable_timing=True)
    s.record(); b.copy_(a); e.record(); e.synchronize(); times.append(s.elapsed_time(e) / 1e3)
times.sort(); t = times[len(times) // 2]
print(f"copy bandwidth: {2 * n / t / 1e9:.0f} GB/s (median of 20, 1 GiB)")'
grep -h "copy bandwidth" "$logs/membw.log" | tee -a "$summary"

section "bench (bonsai bench, median t/s of $reps)"
wait "$models_pid"
bench() { # NAME MODEL ARGS...
  local name="$1" model="$2"
  shift 2
  step "$name" 240 "$bin/bonsai" bench -m "$model" --backend cuda -r "$reps" -o md "$@"
  grep '^| [^-]' "$logs/$name.log" | grep -v '^| model' | sed "s/^/$name /" >>"$summary"
}
for s in $shapes; do
  for t in $types; do
    f="$models/$s-$t.gguf"
    [ -f "$f" ] || { echo "no model $f (see make_models.log)" | tee -a "$summary"; continue; }
    bench "bench_${s}_${t}" "$f" -p 512 -n 128
    bench "bench_${s}_${t}_d4096" "$f" -p 0 -n 128 -d 4096
  done
done
first="$models/$(echo "$shapes" | awk '{print $NF}')-q1_0.gguf"
if [ -f "$first" ]; then
  for opt in graphs=off tensor_cores=off int8_gemv=off kernels=reference; do
    bench "bench_q1_0_${opt%%=*}_off" "$first" -p 512 -n 128 --backend-options "$opt"
  done
fi

section "summary"
cat "$summary"
! grep -q 'FAIL\|TIMEOUT' "$summary"
