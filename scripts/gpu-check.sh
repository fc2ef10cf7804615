#!/usr/bin/env bash
# The one-command GPU check of the CUDA plugin. Runs every CUDA test, the
# plugin conformance and golden suites with the CUDA plugin, compute-sanitizer,
# a cold and a warm JIT, the device's copy bandwidth and `bonsai bench` on the
# real model shapes, mainline llama.cpp's llama-bench on the same files when
# its source came in the carry folder, and ncu on the main kernels, then
# prints a summary table. Each step has its own time limit and the whole run
# a deadline (steps past it are skipped and say so), so it fits in one
# 10-minute device command and always leaves its summary.
#
# Usage (from the repository root):
#   scripts/gpu-check.sh            on a GPU machine, with the carry folder of
#                                   scripts/gpu-bundle.sh in ./.gpu-carry (or
#                                   its bundle in ./.gpu, or a build in
#                                   $BONSAI_BUILD_DIR)
#   scripts/gpu-check.sh --fake     the same script against the fake driver of
#                                   the build (no GPU: CI), on the tiny models
# Environment: BONSAI_BUILD_DIR; OUT (when set, the summary and a tarball of
# the logs go there, the logs themselves to GPU_CHECK_WORK, default
# /tmp/bonsai-gpu-check; else everything to BUILD/gpu-check);
# GPU_CHECK_SHAPES (default "1.7b 4b 8b"), GPU_CHECK_TYPES (default "q1_0
# q2_0"), GPU_CHECK_REPS (default 3), GPU_CHECK_BUDGET_S (default 560, one
# device command; 1800 with --fake, which has no such limit),
# GPU_CHECK_SECTIONS (default "targets nvrtc tests persistent sanitizer bench
# load parallel speculative llama ncu options qwen35": the GPU sections to run,
# in that order; "profile", ncu's full set on the persistent kernel, and
# "paths", single-token decode on the graph and the persistent path, run
# only when named; the plugin/JIT section always runs), GPU_CHECK_Q35_TYPES (default "q1_0
# q2_0_g64": the 27B files the qwen35 section makes and benches),
# GPU_CHECK_GOLDEN_FILTER (default "*": the golden tests the tests and
# persistent sections run, for a checkout that carries only some of
# tests/data).
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
mode=gpu
[ "${1:-}" = "--fake" ] && mode=fake
started=$(date +%s)
budget=560 # one 10-minute device command, with room to pack the logs
[ "$mode" = fake ] && budget=1800 # emulated, single-threaded, and no device limit
deadline=$((started + ${GPU_CHECK_BUDGET_S:-$budget}))

if [ "$mode" = gpu ] && [ ! -x "$root/.gpu/bin/bonsai" ] && [ -f "$root/.gpu-carry/bundle.tar.xz" ]; then
  tar -C "$root" -xJf "$root/.gpu-carry/bundle.tar.xz"
fi
if [ -n "${BONSAI_BUILD_DIR:-}" ]; then
  build="$BONSAI_BUILD_DIR"
elif [ -x "$root/.gpu/bin/bonsai" ]; then
  build="$root/.gpu"
else
  build="$root/build"
fi
if [ -n "${OUT:-}" ]; then
  work="${GPU_CHECK_WORK:-/tmp/bonsai-gpu-check}"
else
  work="$build/gpu-check"
fi
logs="$work/logs"
rm -rf "$logs"
mkdir -p "$logs"
summary="$work/summary.txt"
: >"$summary"
export LD_LIBRARY_PATH="$build/lib:$build/syslib:${LD_LIBRARY_PATH:-}"
export BONSAI_CACHE_DIR="$work/cache"
data="$root/tests/data"
bin="$build/bin"
plugin="$build/lib/bonsai/plugins/libbonsai_cuda.so"
export BONSAI_PLUGIN="$plugin"
reps="${GPU_CHECK_REPS:-3}"
sections=" ${GPU_CHECK_SECTIONS:-targets nvrtc tests persistent sanitizer bench load parallel speculative llama ncu options qwen35} "
wanted() { [[ "$sections" == *" $1 "* ]]; }

# Mainline llama.cpp, for llama-bench on the same files: a llama-bench built
# elsewhere for this GPU when one came along (scripts/gpu-bundle.sh packs
# $LLAMA_BENCH_BUILD's), else its source, built in the background (low
# priority) while the tests run.
llama_src="$root/.gpu-carry/llama.tar.xz"
llama_prebuilt="$root/.gpu-carry/llama-bench.tar.xz"
llama_build="$work/llama.cpp/build"
if [ "$mode" = gpu ] && [ -f "$llama_prebuilt" ]; then
  mkdir -p "$llama_build"
  tar -C "$llama_build" -xJf "$llama_prebuilt"
  # It links this machine's CUDA toolkit, and NCCL where the toolkit has
  # none (a Python wheel's copy).
  if ldd "$llama_build/bin/llama-bench" 2>/dev/null | grep -q 'libnccl.*not found'; then
    nccl="$(find /usr /opt /root -name 'libnccl.so.2' 2>/dev/null | head -1)"
    [ -n "$nccl" ] && llama_libs="$(dirname "$nccl")"
  fi
elif [ "$mode" = gpu ] && [ -f "$llama_src" ] && command -v nvcc >/dev/null; then
  mkdir -p "$work/llama.cpp"
  tar -C "$work/llama.cpp" -xJf "$llama_src"
  setsid nice -n 19 bash -c "cmake -S '$work/llama.cpp' -B '$llama_build' -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a -DLLAMA_CURL=OFF \
    -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    && cmake --build '$llama_build' -j$(nproc) --target llama-bench" >"$logs/llama_build.log" 2>&1 </dev/null &
  llama_pid=$!
fi

# Writes the summary and the logs' tarball to $OUT (the device tool returns
# at most 8 files from there).
finish() {
  if [ -n "${OUT:-}" ]; then
    cp "$summary" "$OUT/summary.txt"
    tar -C "$work" -czf "$OUT/logs.tgz" logs
  fi
}
trap finish EXIT

# Test binaries name tests/data and the plugin folder by the absolute paths
# of the build they came from; a bundle built elsewhere finds them through
# links made here (only where nothing exists at those paths yet).
link_build_paths() {
  local origin
  origin="$(grep -a -o '/[[:alnum:]_./+-]*/tests/data' "$bin/test_golden" | head -1 | sed 's,/tests/data$,,')"
  if [ -n "$origin" ] && [ "$origin" != "$root" ] && [ ! -e "$origin" ]; then
    mkdir -p "$(dirname "$origin")" && ln -s "$root" "$origin"
  fi
  if [ -n "$origin" ] && [ ! -e "$root/build" ] && [ "$build" != "$root/build" ]; then
    ln -s "$build" "$root/build"
  fi
}

now() { date +%s.%N; }

# step NAME LIMIT_S CMD...: runs CMD with a time limit (cut to what is left
# before the deadline), logs to logs/NAME.log and records the result in the
# summary.
step() {
  local name="$1" limit="$2"
  shift 2
  local left=$((deadline - $(date +%s)))
  if [ "$left" -lt 10 ]; then
    printf '%-28s %-14s\n' "$name" "skipped: out of time" | tee -a "$summary"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
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
  # Only the per-test lines (they end with the time), not the final lists.
  failed=$(grep -c '^\[  FAILED  \] [A-Za-z].*ms)$' "$log")
  skipped=$(grep -c '^\[  SKIPPED \] [A-Za-z].*ms)$' "$log")
  if [ -n "$passed" ] || [ "$failed" -gt 0 ]; then
    echo "passed ${passed:-0}, failed $failed, skipped $skipped"
  fi
}

section() { echo "## $*" | tee -a "$summary"; }

# The device's copy bandwidth (bytes read + written), once per run: a
# section of its own, and its figure in GB/s in $copy_gbs.
copy_gbs=""
measure_bandwidth() {
  [ -n "$copy_gbs" ] && return
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
  grep -h "^copy bandwidth" "$logs/membw.log" 2>/dev/null | tee -a "$summary"
  copy_gbs=$(grep -h -o '^copy bandwidth: [0-9]*' "$logs/membw.log" 2>/dev/null | grep -o '[0-9]*$')
  [ -n "$copy_gbs" ] || copy_gbs=none
}

# Issue 40's targets in one call (docs/cuda.md, "Issue 40's targets in one
# call"): on the files they name (1.7B Q1_0, 8B Q1_0, 8B Q2_0), pp512 and
# tg128, tg128 at 4,096 positions (both stated against the copy bandwidth),
# 1 and 8 sequences, the 8B's steps of 2, 4 and 8 tokens against one token,
# speculative decoding (the 1.7B draft of the 8B pair, and prompt lookup),
# the 8B's warm run to its first token, and mainline llama.cpp's llama-bench
# on the same files where one came along; then scripts/gpu-targets.py's
# verdict table. With --fake the tiny models stand in for every file at
# small sizes: the plumbing, not the figures.
targets_section() {
  section "GPU decode targets (issue 67)"
  local pp=512 tg=128 depth=4096 par_n=64 np=8 reps_here="$reps" limit_s=120 gbs note name f
  local -A files
  # The decode tuner's clock: the GPU's events, or on the fake driver a
  # script (tests/cuda/fake_driver/fake_clock.hpp) under which prefetching
  # wins, so that the tables have a choice to show.
  local tune_env=(env)
  if [ "$mode" = fake ]; then
    pp=16 tg=4 depth=32 par_n=4 np=2 reps_here=1 gbs=1
    limit_s=300 # emulated kernels on one core
    files=([1.7b_q1_0]="$tiny" [8b_q1_0]="$tiny" [8b_q2_0]="$data/tiny-q2.gguf"
      [27b_q1_0]="$data/tiny-q35-q1.gguf")
    note="fake driver: tiny-q1, tiny-q2 and tiny-q35-q1 stand in for every file, at a nominal 1 GB/s; not the targets' figures"
    tune_env=(env "BONSAI_FAKE_CUDA_TIMES=persistent+prefetch=50;persistent+head=80;persistent=60;=3")
  else
    measure_bandwidth
    gbs="$copy_gbs"
    # The background maker makes these first.
    for name in 1.7b_q1_0 8b_q1_0 8b_q2_0 27b_q1_0; do
      files[$name]="$models/${name%_q*}-q${name#*_q}.gguf"
    done
    note="$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1); copy bandwidth $gbs GB/s"
  fi
  local bandwidth=()
  [ "$gbs" != none ] && bandwidth=(--bandwidth "$gbs")
  # target_bench STEP ARGS...: bonsai bench on file $f, rows as JSON lines.
  target_bench() {
    local name="$1"
    shift
    step "$name" "$limit_s" "$bin/bonsai" bench -m "$f" --backend cuda -r "$reps_here" -o jsonl "$@"
  }
  for name in 1.7b_q1_0 8b_q1_0 8b_q2_0; do
    f="${files[$name]}"
    wait_for_model "$f" || continue
    target_bench "targets_$name" -p "$pp" -n "$tg" "${bandwidth[@]}"
    target_bench "targets_${name}_d4096" -p 0 -n "$tg" -d "$depth" "${bandwidth[@]}"
    [ "$name" != 1.7b_q1_0 ] && target_bench "targets_${name}_parallel" -p 0 -n "$par_n" -np "1,$np"
    if [ "$name" = 8b_q1_0 ]; then
      # Steps of K tokens of one sequence (a prompt of K), against one token's.
      target_bench "targets_${name}_steps" -p 2,4,8 -n "$tg"
      # Prompt lookup: random weights fall into loops, so the context repeats
      # itself and the lookup of its last 2 tokens finds what comes next.
      target_bench targets_spec_ngram -p 0 -n "$tg" --draft-ngram 2
    fi
    if [ -x "$llama_build/bin/llama-bench" ]; then
      step "llama_targets_$name" 90 env LD_LIBRARY_PATH="${llama_libs:-}:$LD_LIBRARY_PATH" \
        "$llama_build/bin/llama-bench" -m "$f" -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o jsonl
    fi
  done
  # The decode tuner (docs/cuda.md, "The decode tuner") afresh on the 1.7B,
  # 8B and 27B shapes: each width's candidates and their device time a step
  # (single tokens; the 8B also 8 sequences), beside llama.cpp's tg on the
  # same file. The 27B (qwen35) has one path: the log says so.
  for name in 1.7b_q1_0 8b_q1_0 27b_q1_0; do
    f="${files[$name]}"
    [ -n "$f" ] && wait_for_model "$f" || continue
    local tune_np=1
    [ "$name" = 8b_q1_0 ] && tune_np="1,$np"
    step "targets_tune_$name" "$limit_s" "${tune_env[@]}" "$bin/bonsai" bench -m "$f" --backend cuda \
      --tune -r 1 -o jsonl -p 0 -n "$tg" -np "$tune_np"
    if [ "$name" = 27b_q1_0 ] && [ -x "$llama_build/bin/llama-bench" ]; then
      step "llama_targets_$name" 150 env LD_LIBRARY_PATH="${llama_libs:-}:$LD_LIBRARY_PATH" \
        "$llama_build/bin/llama-bench" -m "$f" -ngl 99 -fa 1 -p 512 -n 128 -r 3 -o jsonl
    fi
  done
  # The 1.7B draft of the 8B pair, which agrees with it on every token (the
  # fake: tiny-q1 drafting for itself).
  if [ "$mode" = fake ]; then
    pair_draft="$tiny" pair_target="$tiny"
  else
    make_pair 1.7b 8b 0 || pair_target=""
  fi
  if [ -n "$pair_target" ]; then
    f="$pair_target"
    target_bench targets_spec_pair -p 0 -n "$tg" -md "$pair_draft" --draft-p-min 0
  fi
  [ -x "$llama_build/bin/llama-bench" ] ||
    echo "targets: llama.cpp not run (no llama-bench in .gpu-carry: scripts/gpu-bundle.sh packs one)" |
      tee -a "$summary"
  # The whole program to its first token, page cache and PTX cache warm:
  # the second of two runs.
  f="${files[8b_q1_0]}"
  [ -f "$f" ] && step targets_load "$limit_s" bash -c '
    for run in 1 2; do
      start=$(date +%s.%N)
      "$1" run -m "$2" --backend cuda -p hi -n 1 --temp 0 || exit 1
      end=$(date +%s.%N)
    done
    awk -v a="$start" -v b="$end" "BEGIN { printf \"warm run to its first token: %.2f s\\n\", b - a }"
  ' targets_load "$bin/bonsai" "$f"
  local table="$logs/targets_table.txt" rc=0
  python3 "$root/scripts/gpu-targets.py" "$logs" --note "$note" >"$table" 2>&1 || rc=$?
  tee -a "$summary" <"$table"
  # A table that could not be made fails the check; with --fake, whose
  # every step runs, so does a target without a figure, but for the ratio to
  # llama.cpp, which never runs on the fake driver.
  if [ "$rc" -ne 0 ] || { [ "$mode" = fake ] && grep 'no figure' "$table" | grep -vq "llama.cpp's"; }; then
    echo "targets_table                FAIL(rc=$rc or a target without a figure)" | tee -a "$summary"
  fi
  # The tuner's table must have a choice for the 1.7B and 8B files (a row
  # marked *); on the fake driver, whose clock is scripted, always.
  for name in 1.7b_q1_0 8b_q1_0; do
    if [ "$mode" = fake ] && ! grep -Eq "^$name +[0-9]+ +\* " "$table"; then
      echo "targets_tune_table           FAIL(no tuned choice for $name)" | tee -a "$summary"
    fi
  done
}

# The speculative pair (docs/speculative.md): a draft of shape $1 and a
# model of shape $2 whose layers add --layer-gain $3 to the residual and
# whose LM head is the draft's, so that at gain 0 the draft agrees with it
# on every token. Sets pair_draft and pair_target; false when either could
# not be made (make_models.log says why).
make_pair() {
  pair_draft="$models/pair-draft-$1.gguf"
  pair_target="$models/pair-$2-gain-$3.gguf"
  local vocab="$data/qwen3-vocab.gguf"
  [ -f "$pair_draft" ] || { "$bin/bonsai-gguf" make-model --preset "$1" --untied --layer-gain 0 \
    --vocab "$vocab" -o "$pair_draft.tmp" && mv "$pair_draft.tmp" "$pair_draft"; } \
    >>"$logs/make_models.log" 2>&1
  [ -f "$pair_draft" ] || return 1
  [ -f "$pair_target" ] || { "$bin/bonsai-gguf" make-model --preset "$2" --untied \
    --layer-gain "$3" --head-of "$pair_draft" --seed 5 --vocab "$vocab" -o "$pair_target.tmp" &&
    mv "$pair_target.tmp" "$pair_target"; } >>"$logs/make_models.log" 2>&1
  [ -f "$pair_target" ]
}

# Waits until the background maker has written model file $1 (or has
# stopped, or the deadline is near); false if the file is not there.
wait_for_model() {
  while [ ! -f "$1" ] && [ -n "${models_pid:-}" ] && kill -0 "$models_pid" 2>/dev/null &&
    [ $((deadline - $(date +%s))) -gt 30 ]; do
    sleep 1
  done
  [ -f "$1" ]
}

if [ "$mode" = fake ]; then
  export BONSAI_CUDA_DRIVER="$build/tests/cuda/fake_driver/libbonsai_fake_cuda.so"
  [ -f "$BONSAI_CUDA_DRIVER" ] || { echo "gpu-check: no fake driver in $build" >&2; exit 1; }
  # The fake driver runs NVRTC's PTX: without NVRTC there is nothing to check.
  nvrtc=0
  "$root/scripts/nvrtc-available.sh" || nvrtc=$?
  if [ "$nvrtc" -eq 1 ]; then
    echo "gpu-check --fake: skipped: NVRTC not available" | tee -a "$summary"
    exit 0
  elif [ "$nvrtc" -ne 0 ]; then
    echo "gpu-check --fake: scripts/nvrtc-available.sh failed (exit $nvrtc)" >&2
    exit 1
  fi
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
if grep -q "NVRTC compile" "$logs/jit_warm.log" 2>/dev/null; then
  echo "jit_warm: NVRTC compiled again: the disk cache was not used" | tee -a "$summary"
fi
grep -h "NVRTC compile\|load:\|prompt\|generation" "$logs/jit_cold.log" "$logs/jit_warm.log" \
  >>"$summary" 2>/dev/null
step auto_picks_cuda 120 bash -c "BONSAI_LOG_LEVEL=info '$bin/bonsai' run -m '$tiny' -p hi -n 2 \
  --temp 0 2>&1 | tee /dev/stderr | grep -q \"using .*libbonsai_cuda\""

if [ "$mode" = fake ]; then
  section "fake driver: end to end on the tiny model"
  step bench_tiny 600 "$bin/bonsai" bench -m "$tiny" --backend cuda -p 16 -n 4 -r 1
  grep '^|' "$logs/bench_tiny.log" 2>/dev/null | tee -a "$summary"
  # Three sequences in one multi-sequence step (the plugin's KV slots).
  step bench_tiny_parallel 300 "$bin/bonsai" bench -m "$tiny" --backend cuda -p 0 -n 4 -np 3 -r 1
  grep '^|' "$logs/bench_tiny_parallel.log" 2>/dev/null | tee -a "$summary"
  # The emulated suites each keep one core busy: conformance and the qwen35
  # gates run beside the golden gates and the targets (CI runs the fuzzers
  # beside this check, on the other core, for their first minutes).
  step conformance 600 "$bin/test_conformance" &
  beside=$!
  # The golden gates on the fast kernels (tensor-core prefill, int8 decode
  # through the graph): the 1-bit and ternary models' token-by-token logits
  # and every encoding's one-step prefill (the host converts the others to
  # Q2_0 or Q8_0); the full suite (reference kernels on a 151,936-row head)
  # takes too long emulated, and the greedy continuations run on the fake
  # driver in test_cuda (tiny-q1's reference tokens, every decode path).
  step golden 600 "$bin/test_golden" --gtest_filter='*TokenByToken*/tiny_q1_default:*TokenByToken*/tiny_q2_default:*PrefillInOneStep*/tiny_q1_default:*PrefillInOneStep*/tiny_q2_default:*PrefillInOneStep*/tiny_q2g64_default:*PrefillInOneStep*/tiny_pq2_default:*PrefillInOneStep*/tiny_ptq1_default:*PrefillInOneStep*/tiny_tq1_default:*PrefillInOneStep*/tiny_tq2_default:*PrefillInOneStep*/tiny_tq2_mixed_default'
  grep -h '^\[ golden' "$logs/golden.log" >>"$summary" 2>/dev/null
  # decode=persistent (every layer of a step in one launch, its blocks alive
  # at once in the emulator), as is and each other way
  # (persistent_quantize=consumer, persistent_matmul=dp4a), runs on the fake
  # driver in test_cuda (CudaPersistentDecode: tiny-q1's reference tokens
  # and logits) and in test_cuda_persistent's emulator (Q1_0 and Q2_0 models
  # against float64), so CI does not spend two more minutes on its golden
  # gates here; the GPU sections run them.
  wait "$beside"
  # qwen35 through the plugin's own layers (ABI 1.2 layer kinds): the golden
  # logits of both tiny qwen35 models; and the MTP draft's inputs: the
  # trunk's hidden states (ABI 1.3) and the MTP layer through the plugin's
  # matmul against float64, default kernels.
  {
    step golden_qwen35 600 "$bin/test_golden" --gtest_filter='*LayerKinds.PromptLogits*'
    step golden_qwen35_mtp 600 env BONSAI_PLUGIN_OPTIONS= "$bin/test_golden" \
      --gtest_filter='*MtpLayerGolden.HiddenStates*/tiny_q35_q1'
  } &
  beside=$!
  targets_section
  wait "$beside"
  grep -h '^\[ golden' "$logs/golden_qwen35_mtp.log" >>"$summary" 2>/dev/null
  echo "## summary ($summary)"
  cat "$summary"
  ! grep -q 'FAIL\|TIMEOUT' "$summary"
  exit $?
fi

# Real GPU from here on. Model files are made in the background meanwhile.
models="${GPU_CHECK_MODELS:-/tmp/bonsai-models}"
mkdir -p "$models"
shapes="${GPU_CHECK_SHAPES:-1.7b 4b 8b}"
types="${GPU_CHECK_TYPES:-q1_0 q2_0}"
# The targets section's files first when it runs (it waits for each).
wanted_models=()
wanted targets && wanted_models+=(1.7b:q1_0 8b:q1_0 8b:q2_0 27b:q1_0)
for s in $shapes; do
  for t in $types; do
    wanted_models+=("$s:$t")
  done
done
(
  for item in "${wanted_models[@]}"; do
    s="${item%%:*}" t="${item#*:}"
    f="$models/$s-$t.gguf"
    [ -f "$f" ] || { "$bin/bonsai-gguf" make-model --preset "$s" --type "$t" \
      --vocab "$data/qwen3-vocab.gguf" -o "$f.tmp" && mv "$f.tmp" "$f"; }
  done
) >"$logs/make_models.log" 2>&1 &
models_pid=$!

bench() { # NAME MODEL ARGS...
  local name="$1" model="$2"
  shift 2
  step "$name" 120 "$bin/bonsai" bench -m "$model" --backend cuda -r "$reps" -o md "$@"
  table_rows "$name"
}
# The bench table rows of a step's log, each prefixed with the step's name.
table_rows() {
  grep '^| [^-]' "$logs/$1.log" 2>/dev/null | grep -v '^| model' | sed "s/^/$1 /" >>"$summary"
}
# The golden gates with decode=persistent, their lines into the summary.
golden_persistent() {
  step golden_persistent 150 env BONSAI_PLUGIN_OPTIONS=decode=persistent "$bin/test_golden" \
    --gtest_filter="${GPU_CHECK_GOLDEN_FILTER:-*}"
  grep -h '^\[ golden' "$logs/golden_persistent.log" >>"$summary" 2>/dev/null
}
# trace STEP FILE MODEL SEQUENCES OPTIONS: 32 tokens a sequence with
# persistent_trace=logs/FILE.txt, whose table goes into the summary.
trace() {
  step "$1" 90 "$bin/bonsai" bench -m "$3" --backend cuda -p 0 -n 32 -np "$4" -r 1 \
    --backend-options "$5;persistent_trace=$logs/$2.txt"
  head -9 "$logs/$2.txt" 2>/dev/null | tee -a "$summary"
}

# One line per profiled launch: kernel, grid x block, duration, DRAM and SM
# throughput as fractions of their peaks.
ncu_digest() {
  awk '/^  [A-Za-z_0-9]+ \(/ { name = $1; grid = ""
         if (match($0, /\([^)]*\)x\([^)]*\)/)) grid = substr($0, RSTART, RLENGTH) }
       /^ +Duration/ { duration = $3 " " $2 }
       /^ +DRAM Throughput/ { dram = $NF }
       /^ +Compute \(SM\) Throughput/ {
         printf "  %-32s %-24s %12s  DRAM %6s %%  SM %6s %%\n", name, grid, duration, dram, $NF }' "$1"
}

wanted targets && targets_section

if wanted nvrtc; then
section "NVRTC with this machine's toolkit"
# test_cuda's NVRTC suites: every program compiles for each architecture and
# its PTX has every entry point. Its kernel-emulator suites run in CI, and its
# fake-driver suites (several minutes, single-threaded) on any machine with
# NVRTC: this GPU adds nothing to either.
step test_cuda 100 "$bin/test_cuda" --gtest_filter='Nvrtc.*:KernelSources.*:KernelPrograms.*:Arch/*'
fi

if wanted tests; then
section "tests"
step conformance 150 "$bin/test_conformance"
step golden 150 "$bin/test_golden" --gtest_filter="${GPU_CHECK_GOLDEN_FILTER:-*}"
grep -h '^\[ golden' "$logs/golden.log" >>"$summary" 2>/dev/null
fi

# decode=persistent (kernels/persistent.cuh, one launch per step), most
# telling first, since a call may run out of time: its golden gates and
# conformance, as is (inputs quantized by their producers, steps of several
# tokens on the int8 MMA) and with each of the other ways
# (persistent_quantize=consumer, persistent_matmul=dp4a); the largest shape
# with 1-8 sequences each way and both (the figures behind the defaults);
# where a launch's time goes (persistent_trace); compute-sanitizer as is and
# the other way; then tg128 on every model beside the default rows of the
# bench section (the default decode=auto takes the same kernel for single
# tokens now), at 4,096 of context, and ncu on one launch.
if wanted persistent; then
  section "decode=persistent"
  consumer="decode=persistent;persistent_quantize=consumer"
  dp4a="decode=persistent;persistent_matmul=dp4a"
  both="$consumer;persistent_matmul=dp4a"
  golden_persistent
  step persistent_conformance 150 env BONSAI_PLUGIN_OPTIONS=decode=persistent "$bin/test_conformance"
  for variant in consumer dp4a; do
    options="$consumer"
    [ "$variant" = dp4a ] && options="$dp4a"
    step "golden_persistent_$variant" 150 env BONSAI_PLUGIN_OPTIONS="$options" "$bin/test_golden" \
      --gtest_filter="${GPU_CHECK_GOLDEN_FILTER:-*}"
    grep -h '^\[ golden' "$logs/golden_persistent_$variant.log" >>"$summary" 2>/dev/null
  done
  wait "$models_pid" 2>/dev/null
  f="$models/$(echo "$shapes" | awk '{print $NF}')-q1_0.gguf"
  if [ -f "$f" ]; then
    bench persistent_parallel "$f" -p 0 -n 64 -np 1,2,4,8 --backend-options decode=persistent
    bench persistent_consumer_parallel "$f" -p 0 -n 64 -np 1,2,4,8 --backend-options "$consumer"
    bench persistent_dp4a_parallel "$f" -p 0 -n 64 -np 1,2,4,8 --backend-options "$dp4a"
    bench persistent_consumer_dp4a_parallel "$f" -p 0 -n 64 -np 1,2,4,8 --backend-options "$both"
  fi
  # Each stage's share of a layer and what it was spent on, one sequence and
  # eight, on the smallest and the largest shape, each way.
  for s in $(echo "$shapes" | awk '{print $1, $NF}' | tr ' ' '\n' | sort -u); do
    traced="$models/$s-q1_0.gguf"
    [ -f "$traced" ] || continue
    for np in 1 8; do
      for variant in default consumer dp4a; do
        name="trace_${s}_np${np}_$variant"
        options="decode=persistent"
        [ "$variant" = consumer ] && options="$consumer"
        [ "$variant" = dp4a ] && options="$dp4a"
        trace "persistent_$name" "$name" "$traced" "$np" "$options"
      done
    done
  done
  # Three sequences in every step, as is and the other way.
  if command -v compute-sanitizer >/dev/null; then
    for tool in memcheck racecheck synccheck; do
      for variant in default consumer_dp4a; do
        name="persistent_sanitizer_$tool"
        options="decode=persistent"
        [ "$variant" = consumer_dp4a ] && name="${name}_consumer_dp4a" && options="$both"
        step "$name" 90 compute-sanitizer --tool "$tool" --error-exitcode 9 \
          "$bin/bonsai" bench -m "$tiny" --backend cuda -p 2 -n 4 -np 3 -r 1 \
          --backend-options "$options"
        grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$logs/$name.log" >>"$summary"
      done
    done
  fi
  for s in $shapes; do
    for t in $types; do
      g="$models/$s-$t.gguf"
      [ -f "$g" ] && bench "persistent_${s}_${t}" "$g" -p 0 -n 128 --backend-options decode=persistent
    done
  done
  if [ -f "$f" ]; then
    bench persistent_d4096 "$f" -p 0 -n 128 -d 4096 --backend-options decode=persistent
    if command -v ncu >/dev/null; then
      step ncu_persistent 90 ncu --section SpeedOfLight --section LaunchStats --section Occupancy \
        -k regex:persistent --launch-skip 4 --launch-count 2 "$bin/bonsai" run -m "$f" \
        --backend cuda -p hi -n 8 --temp 0 --backend-options decode=persistent
      [ -f "$logs/ncu_persistent.log" ] && ncu_digest "$logs/ncu_persistent.log" >>"$summary"
    fi
  fi
fi

# Which path a single-token step should take (not in the default sections:
# a short look for whoever sets decode=auto): the persistent kernel's golden
# gates, then on every shape tg128 and tg128 at 4,096 of context on each
# path, and 1-8 sequences under the default decode=auto; then on the
# largest shape the persistent kernel's attention key ranges by context and
# single tokens' input records in registers, each against the default; on
# every shape the LM head after the launch (persistent_head=off) and the
# next weights prefetched to L2 (persistent_prefetch=next).
if wanted paths; then
  section "decode paths: graph and persistent, one token a step"
  golden_persistent
  wait "$models_pid" 2>/dev/null
  for s in $shapes; do
    f="$models/$s-q1_0.gguf"
    [ -f "$f" ] || continue
    for path in graph persistent; do
      bench "paths_${s}_$path" "$f" -p 0 -n 128 --backend-options "decode=$path"
      bench "paths_${s}_${path}_d4096" "$f" -p 0 -n 128 -d 4096 --backend-options "decode=$path"
    done
    bench "paths_${s}_auto_parallel" "$f" -p 0 -n 64 -np 1,2,4,8
    # The LM head after the launch instead of in it (persistent_head=off),
    # and the next instruction's weights asked of L2 before each wait
    # (persistent_prefetch=next, off by default until measured).
    bench "paths_${s}_head_off" "$f" -p 0 -n 128 \
      --backend-options "decode=persistent;persistent_head=off"
    bench "paths_${s}_prefetch_next" "$f" -p 0 -n 128 -d 0,4096 \
      --backend-options "decode=persistent;persistent_prefetch=next"
  done
  # Attention's key ranges by context (persistent_keys_per_range) against
  # the default (one attention instruction a block whatever the context),
  # on the largest shape: tg128 short, where 256 keys a range leave one
  # range and no merge, and at 4,096 positions, where they leave the
  # default 16 and 1,024 leave 4.
  f="$models/$(echo "$shapes" | awk '{print $NF}')-q1_0.gguf"
  if [ -f "$f" ]; then
    # The default's trace first: the stages' inputs and trails to compare with.
    trace paths_default_trace paths_default_trace "$f" 1 decode=persistent
    for keys in 256 1024; do
      bench "paths_keys_$keys" "$f" -p 0 -n 128 -d 0,4096 \
        --backend-options "decode=persistent;persistent_keys_per_range=$keys"
    done
    trace paths_keys_256_trace paths_keys_256_trace "$f" 1 \
      "decode=persistent;persistent_keys_per_range=256"
    # Single tokens' input records held in registers (persistent_records).
    bench paths_records_registers "$f" -p 0 -n 128 -d 0,4096 \
      --backend-options "decode=persistent;persistent_records=registers"
    trace paths_records_trace paths_records_trace "$f" 1 \
      "decode=persistent;persistent_records=registers"
    trace paths_prefetch_trace paths_prefetch_trace "$f" 1 \
      "decode=persistent;persistent_prefetch=next"
  fi
fi

# Where the persistent kernel's warps wait, and why (not in the default
# sections: a deeper look for whoever tunes the kernel): ncu's full set with
# warp-stall sampling on one launch of one token and one of eight, on the
# largest shape, digested by scripts/ncu-hotspots.py; the details and the
# whole SASS page go into the logs. Beside it, the launch's trace and
# single-token decode on both paths.
if wanted profile; then
  section "profile: decode=persistent under ncu --set full"
  wait "$models_pid" 2>/dev/null
  f="$models/$(echo "$shapes" | awk '{print $NF}')-q1_0.gguf"
  if [ -f "$f" ] && command -v ncu >/dev/null; then
    for np in 1 8; do
      name="profile_np$np"
      rm -f "$work/$name.ncu-rep"
      step "$name" 150 ncu --set full --import-source yes --clock-control none \
        -k regex:persistent --launch-skip 6 --launch-count 1 -o "$work/$name" \
        "$bin/bonsai" bench -m "$f" --backend cuda -p 0 -n 12 -np "$np" -r 1 \
        --backend-options decode=persistent
      [ -f "$work/$name.ncu-rep" ] || continue
      ncu -i "$work/$name.ncu-rep" --page details >"$logs/${name}_details.txt" 2>&1
      ncu -i "$work/$name.ncu-rep" --page source --csv --print-source sass \
        >"$logs/${name}_sass.csv" 2>&1
      ncu_digest "$logs/${name}_details.txt" | tee -a "$summary"
      python3 "$root/scripts/ncu-hotspots.py" "$logs/${name}_sass.csv" 30 2>&1 | tee -a "$summary"
    done
    bench profile_graph_np1 "$f" -p 0 -n 128 --backend-options decode=graph
    bench profile_persistent_np1 "$f" -p 0 -n 128 --backend-options decode=persistent
    trace profile_trace_np1 profile_trace_np1 "$f" 1 decode=persistent
  else
    echo "profile: skipped: no model $f or no ncu" | tee -a "$summary"
  fi
fi

if wanted sanitizer; then
section "compute-sanitizer (tiny-q1: prefill, then decode through the graph)"
if command -v compute-sanitizer >/dev/null; then
  for tool in memcheck racecheck synccheck; do
    step "sanitizer_$tool" 150 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$bin/bonsai" run -m "$tiny" --backend cuda -p "The quick brown fox" -n 6 --temp 0
    grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$logs/sanitizer_$tool.log" >>"$summary"
    # Three sequences in one step: the int8 GEMVs with several tokens per
    # launch (2-token prompts, 6 tokens in their step, then 3 per step).
    step "sanitizer_${tool}_3seq" 150 compute-sanitizer --tool "$tool" --error-exitcode 9 \
      "$bin/bonsai" bench -m "$tiny" --backend cuda -p 2 -n 4 -np 3 -r 1
    grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$logs/sanitizer_${tool}_3seq.log" >>"$summary"
  done
else
  echo "compute-sanitizer: skipped: not installed" | tee -a "$summary"
fi

# Programmatic dependent launch must not change a single token.
step pdl_same_tokens 120 bash -c "diff <('$bin/bonsai' run -m '$tiny' --backend cuda \
  -p 'The quick brown fox' -n 24 --temp 0 2>/dev/null) <('$bin/bonsai' run -m '$tiny' \
  --backend cuda -p 'The quick brown fox' -n 24 --temp 0 --backend-options pdl=on 2>/dev/null)"
fi

# The copy bandwidth is the yardstick of every decode figure: measured in
# each run, whatever the sections (by the targets section first, if named).
measure_bandwidth
wait "$models_pid"
if wanted bench; then
  section "bench (bonsai bench, median t/s of $reps)"
  for s in $shapes; do
    for t in $types; do
      f="$models/$s-$t.gguf"
      [ -f "$f" ] || { echo "no model $f (see make_models.log)" | tee -a "$summary"; continue; }
      bench "bench_${s}_${t}" "$f" -p 512 -n 128
      bench "bench_${s}_${t}_d4096" "$f" -p 0 -n 128 -d 4096
    done
  done
fi

# Load time, time to first token and device memory of one `bonsai run` per
# shape (Q1_0, warm JIT cache, a 100-token prompt): the run's stats line,
# and the most device memory nvidia-smi saw in use while it ran, less what
# was in use before.
if wanted load; then
  section "load, first token, device memory (bonsai run, Q1_0, 100-token prompt)"
  prompt="$(for i in $(seq 25); do printf 'one two three four '; done)"
  for s in $shapes; do
    f="$models/$s-q1_0.gguf"
    [ -f "$f" ] || continue
    before=$(nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1)
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 50 >"$logs/mem_$s.txt" &
    smi_pid=$!
    step "load_$s" 120 "$bin/bonsai" run -m "$f" --backend cuda -p "$prompt" -n 16 --temp 0
    kill "$smi_pid" 2>/dev/null
    wait "$smi_pid" 2>/dev/null
    peak=$(grep -E '^[0-9]+$' "$logs/mem_$s.txt" | sort -n | tail -1)
    if [[ "$before" =~ ^[0-9]+$ ]] && [ -n "$peak" ]; then
      used="$((peak - before)) MiB"
    else
      used="not read (nvidia-smi gave '$before' before, logs/mem_$s.txt during)"
    fi
    echo "load_$s: $(grep -h '^stats:' "$logs/load_$s.log" | head -1); device memory $used" |
      tee -a "$summary"
  done
fi

# Continuous batching: 1, 2, 4 and 8 sequences decoding in one step each.
if wanted parallel; then
  section "several sequences in one step (bonsai bench -np)"
  for s in $shapes; do
    f="$models/$s-q1_0.gguf"
    [ -f "$f" ] && bench "bench_parallel_$s" "$f" -p 0 -n 64 -np 1,2,4,8
  done
fi

# Speculative decoding (docs/speculative.md): the 1.7B shape drafting for
# the 8B (random weights: 0 % acceptance, the overhead), then drafts of known
# agreement: the 1.7B with perturbed copies of itself (make-model
# --perturb-of), four proposals a step, and the issue's own pair, a 1.7B
# shape with quiet layers drafting for an 8B shape that shares its head
# (make-model --layer-gain/--head-of; G = 0 agrees always, 0.0003 about 80 %
# on the CPU), adaptive and with 2 and 4 proposals a step. Each tg128 row is
# followed by its `gen` and `gen+draft` rows; the log says how many
# proposals were kept.
if wanted speculative; then
  section "speculative decoding (bonsai bench -md, greedy, tg128)"
  small_shape=$(echo "$shapes" | awk '{print $1}')
  big_shape=$(echo "$shapes" | awk '{print $NF}')
  small="$models/$small_shape-q1_0.gguf"
  big="$models/$big_shape-q1_0.gguf"
  if [ -f "$small" ] && [ -f "$big" ] && [ "$small" != "$big" ]; then
    bench spec_draft_small "$big" -p 0 -n 128 -md "$small"
    grep -h 'kept' "$logs/spec_draft_small.log" >>"$summary" 2>/dev/null
  fi
  # Prompt lookup: random weights fall into loops, so the context repeats
  # itself and the lookup of its last 2 tokens finds what comes next.
  if [ -f "$big" ]; then
    bench spec_ngram "$big" -p 0 -n 128 --draft-ngram 2
    grep -h 'kept' "$logs/spec_ngram.log" >>"$summary" 2>/dev/null
    bench spec_ngram_fixed8 "$big" -p 0 -n 128 --draft-ngram 2 --draft-fixed --draft-max 8 \
      --draft-p-min 0
    grep -h 'kept' "$logs/spec_ngram_fixed8.log" >>"$summary" 2>/dev/null
  fi
  for p in 0 0.00001 0.0001; do
    [ -f "$small" ] || break
    copy="$models/perturbed-$p.gguf"
    [ -f "$copy" ] || "$bin/bonsai-gguf" make-model --perturb-of "$small" --perturb "$p" \
      -o "$copy" >>"$logs/make_models.log" 2>&1
    bench "spec_perturbed_$p" "$small" -p 0 -n 128 -md "$copy" --draft-fixed --draft-max 4 \
      --draft-p-min 0
    grep -h 'kept' "$logs/spec_perturbed_$p.log" >>"$summary" 2>/dev/null
  done
  if [ "$small_shape" != "$big_shape" ]; then
    for g in 0 0.0003; do
      make_pair "$small_shape" "$big_shape" "$g" || continue
      target="$pair_target"
      for k in adaptive 2 4; do
        fixed=()
        [ "$k" = adaptive ] || fixed=(--draft-fixed --draft-max "$k")
        bench "spec_pair_${g}_$k" "$target" -p 0 -n 128 -md "$pair_draft" --draft-p-min 0 "${fixed[@]}"
        grep -h 'kept' "$logs/spec_pair_${g}_$k.log" >>"$summary" 2>/dev/null
      done
      # The 5-token verify steps (decode=auto runs them on the persistent
      # kernel) the way they ran before its defaults changed: readers
      # quantizing their inputs, dp4a instead of the int8 MMA; every
      # proposal kept.
      if [ "$g" = 0 ]; then
        bench "spec_pair_0_4_dp4a" "$target" -p 0 -n 128 -md "$pair_draft" --draft-p-min 0 \
          --draft-fixed --draft-max 4 --backend-options "persistent_quantize=consumer;persistent_matmul=dp4a"
        grep -h 'kept' "$logs/spec_pair_0_4_dp4a.log" >>"$summary" 2>/dev/null
      fi
      rm -f "$target" # 1.1 GB each; the disk is shared with the other sections' models
    done
  fi
fi

if wanted llama; then
  section "mainline llama.cpp beside bonsai (same files, same run, 5 repetitions)"
  if [ -n "${llama_pid:-}" ] || [ -x "$llama_build/bin/llama-bench" ]; then
    while [ ! -x "$llama_build/bin/llama-bench" ] && kill -0 "${llama_pid:-}" 2>/dev/null &&
      [ $((deadline - $(date +%s))) -gt 60 ]; do
      sleep 3
    done
    if [ -x "$llama_build/bin/llama-bench" ]; then
      for s in $shapes; do
        for t in $types; do
          f="$models/$s-$t.gguf"
          [ -f "$f" ] || continue
          step "llama_${s}_$t" 90 env LD_LIBRARY_PATH="${llama_libs:-}:$LD_LIBRARY_PATH" \
            "$llama_build/bin/llama-bench" -m "$f" -ngl 99 -fa 1 -p 512 -n 128 -r 5
          table_rows "llama_${s}_$t"
          bench "bonsai_${s}_$t" "$f" -p 512 -n 128 -r 5
          wanted persistent && bench "bonsai_${s}_${t}_persistent" "$f" -p 0 -n 128 -r 5 \
            --backend-options decode=persistent
        done
      done
    else
      echo "llama.cpp: not built in time (logs/llama_build.log)" | tee -a "$summary"
    fi
  else
    echo "llama.cpp: skipped: no source in .gpu-carry (scripts/gpu-bundle.sh packs it)" | tee -a "$summary"
  fi
fi

first="$models/$(echo "$shapes" | awk '{print $NF}')-q1_0.gguf"
if wanted ncu; then
  section "ncu ($(basename "$first"): decode launches without graphs, prefill GEMMs, attention at 1k)"
  if command -v ncu >/dev/null && [ -f "$first" ]; then
    ncu_sections=(--section SpeedOfLight --section LaunchStats --section Occupancy)
    step ncu_decode 90 ncu "${ncu_sections[@]}" --launch-skip 700 --launch-count 16 "$bin/bonsai" run \
      -m "$first" --backend cuda -p hi -n 8 --temp 0 --backend-options graphs=off
    step ncu_prefill 90 ncu "${ncu_sections[@]}" -k regex:mmq --launch-count 8 "$bin/bonsai" bench \
      -m "$first" --backend cuda -p 512 -n 0 -r 1
    step ncu_attention 60 ncu "${ncu_sections[@]}" -k regex:attention --launch-skip 40 \
      --launch-count 4 "$bin/bonsai" bench -m "$first" --backend cuda -p 0 -n 4 -d 1024 -r 1
    step ncu_attention_tc 60 ncu "${ncu_sections[@]}" -k regex:attention_tc --launch-count 2 \
      "$bin/bonsai" bench -m "$first" --backend cuda -p 512 -n 0 -r 1
    for n in ncu_decode ncu_prefill ncu_attention ncu_attention_tc; do
      [ -f "$logs/$n.log" ] && ncu_digest "$logs/$n.log" >>"$summary"
    done
  else
    echo "ncu: skipped: not installed or no model" | tee -a "$summary"
  fi
fi

# The switches, cheapest and most telling first; the slow paths (every
# tensor core off, the reference kernels) last.
if wanted options && [ ! -f "$first" ]; then
  echo "options: skipped: no model $first (see make_models.log)" | tee -a "$summary"
elif wanted options; then
  section "fast paths switched (bonsai bench, $(basename "$first"))"
  # The int8 GEMVs' input quantized by every block instead of once per token
  # (4 launches fewer per layer), programmatic dependent launch, and both.
  bench bench_q1_0_int8_input_block "$first" -p 0 -n 128 --backend-options int8_input=block
  bench bench_q1_0_pdl_on "$first" -p 0 -n 128 --backend-options pdl=on
  bench bench_q1_0_block_pdl "$first" -p 0 -n 128 --backend-options 'int8_input=block;pdl=on'
  # The f16 KV cache where it matters: decode at 4,096 positions.
  bench bench_q1_0_kv_f16_d4096 "$first" -p 0 -n 128 -d 4096 --backend-options kv=f16
  # Prefill on the f16 tensor-core GEMMs instead of the int8 ones (default on 8.0+).
  bench bench_q1_0_prefill_f16 "$first" -p 512 -n 0 --backend-options prefill=f16
  # Prefill attention on CUDA cores (the split kernels) instead of tensor cores,
  # at 512 and at 4,096 tokens, where attention weighs most.
  bench bench_q1_0_attention_cores "$first" -p 512,4096 -n 0 --backend-options prefill_attention=cores
  bench bench_q1_0_attention_tc "$first" -p 4096 -n 0
  for opt in graphs=off int8_gemv=off tensor_cores=off kernels=reference; do
    bench "bench_q1_0_${opt%%=*}_off" "$first" -p 512 -n 128 --backend-options "$opt"
  done
fi

# qwen35 (Bonsai-27B) through the plugin's own layers (ABI 1.2 layer kinds):
# the layer-kinds ABI suite and the qwen35 golden gates, the sanitizers with
# three sequences in one step, then the 27B shape (made here) beside
# mainline llama.cpp on the same files when it was built.
if wanted qwen35; then
  section "qwen35 layers (layer kinds)"
  # The golden models only where the checkout carries them.
  [ -f "$data/tiny-q35-q1.gguf" ] || echo "qwen35 gates: skipped: no tests/data/tiny-q35-q1.gguf" |
    tee -a "$summary"
  [ -f "$data/tiny-q35-q1.gguf" ] && step qwen35_golden 200 "$bin/test_golden" \
    --gtest_filter='*LayerKinds*:*q35*'
  grep -h '^\[ golden' "$logs/qwen35_golden.log" >>"$summary" 2>/dev/null
  if command -v compute-sanitizer >/dev/null && [ -f "$data/tiny-q35-q1.gguf" ]; then
    for tool in memcheck racecheck synccheck; do
      step "qwen35_sanitizer_$tool" 150 compute-sanitizer --tool "$tool" --error-exitcode 9 \
        "$bin/bonsai" bench -m "$data/tiny-q35-q1.gguf" --backend cuda -p 12 -n 4 -np 3 -r 1
      grep -h "ERROR SUMMARY\|RACECHECK SUMMARY" "$logs/qwen35_sanitizer_$tool.log" >>"$summary"
    done
  fi
  for t in ${GPU_CHECK_Q35_TYPES-q1_0 q2_0_g64}; do
    f="$models/27b-$t.gguf"
    [ -f "$f" ] || step "make_27b_$t" 150 "$bin/bonsai-gguf" make-model --preset 27b --type "$t" \
      --vocab "$data/qwen3-vocab.gguf" -o "$f"
    [ -f "$f" ] || continue
    bench "qwen35_27b_$t" "$f" -p 512 -n 128
    bench "qwen35_27b_${t}_parallel" "$f" -p 0 -n 32 -np 1,4
    if [ -x "$llama_build/bin/llama-bench" ]; then
      step "llama_27b_$t" 150 env LD_LIBRARY_PATH="${llama_libs:-}:$LD_LIBRARY_PATH" \
        "$llama_build/bin/llama-bench" -m "$f" -ngl 99 -fa 1 -p 512 -n 128 -r 3
      table_rows "llama_27b_$t"
    fi
  done
fi

section "summary"
cat "$summary"
! grep -q 'FAIL\|TIMEOUT' "$summary"
