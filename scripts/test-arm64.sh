#!/usr/bin/env bash
# Cross-builds bonsai for 64-bit ARM Linux (aarch64) into build-arm64/ with
# Debian's cross compiler and arm64 libraries (multiarch), and runs the CPU
# plugin's suites under qemu-aarch64 in user mode (docs/arm64.md). The
# programs run on the multiarch loader and C library (libc6:arm64, at the
# paths an arm64 system has them), not on the cross compiler's own copies in
# /usr/aarch64-linux-gnu (qemu's -L): those are another build of glibc, and a
# loader of one build with the C library of the other corrupts pthread_create's
# stack cache (the first thread a program starts never starts).
#   scripts/test-arm64.sh                     install what is missing, build, test
#                                             (the selection CI runs, below)
#   scripts/test-arm64.sh full                the same with every test of the suites
#   scripts/test-arm64.sh run PROGRAM [ARGS]  run one aarch64 program under the
#       emulator: a name in build-arm64/bin (test_cpu, bonsai, ...) or a path.
#       QEMU_CPU=cortex-a53 (ARMv8.0), neoverse-n1 (dotprod) or max (the
#       default: dotprod and i8mm) picks the CPU it emulates.
# The suites: the kernel tests (every AArch64 set against float64, the scalar
# quantizer and each other) on qemu's max CPU (dotprod and i8mm) and on an
# ARMv8.0 Cortex-A53 (neon only); the golden gates of the dense and qwen35
# models and the plugin conformance suite with the reference kernels and the
# AArch64 sets forced by name (`full`: every test of them; by default the
# selection below, which CI runs); bonsai-plugin-check; the CPU plugin's own
# tests (default set, refusals, log lines) on a Neoverse N1 and a Cortex-A53.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${BONSAI_ARM64_BUILD_DIR:-$root/build-arm64}"

emulator() {
  command -v qemu-aarch64-static || command -v qemu-aarch64 || {
    echo "test-arm64: no qemu-aarch64 (scripts/install-deps.sh arm64 installs it)" >&2
    return 1
  }
}

if [ "${1:-}" = run ]; then
  shift
  if [ $# -eq 0 ]; then
    echo "usage: scripts/test-arm64.sh run PROGRAM [ARGS...]" >&2
    exit 2
  fi
  program="$1"
  shift
  if [[ "$program" != */* ]]; then program="$build/bin/$program"; fi
  if [ ! -f "$program" ]; then
    echo "test-arm64: no program $program (build it with scripts/test-arm64.sh first)" >&2
    exit 2
  fi
  qemu="$(emulator)"
  exec "$qemu" "$program" "$@"
fi
mode=ci
if [ "${1:-}" = full ]; then
  mode=full
  shift
fi
if [ $# -ne 0 ]; then
  echo "usage: scripts/test-arm64.sh [full | run PROGRAM [ARGS...]]" >&2
  exit 2
fi

"$root/scripts/install-deps.sh" arm64
qemu="$(emulator)"
if [ ! -f "$build/build.ninja" ]; then
  # No benchmarks (Google Benchmark has no arm64 package here); tests are
  # listed when ctest runs, not by running each program at build time.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_TOOLCHAIN_FILE="$root/cmake/toolchains/aarch64-linux-gnu.cmake" \
    -DBONSAI_BUILD_BENCHMARKS=OFF -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST
fi
# test_host (the qwen35 gates per kernel set) is `full`'s: it builds the host
# library and its tests, a quarter of this build, for gates whose kernels the
# golden selection's qwen35 layer kinds run as well.
targets=(bonsai_cpu test_cpu test_golden test_conformance bonsai-plugin-check)
[ "$mode" = full ] && targets+=(test_host)
cmake --build "$build" --target "${targets[@]}"
echo "test-arm64: installed and built in $SECONDS s"

# Two suites at a time (one per core of a CI machine); each prints whole
# when it ends.
work="$(mktemp -d)"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
names=()
# suite NAME CPU PROGRAM [ARGS...]: one program under the emulator on CPU.
suite() {
  local name="$1" cpu="$2" program="$3" n=${#names[@]}
  shift 3
  names+=("$name")
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n || true; done
  (
    start=$SECONDS
    rc=0
    QEMU_CPU="$cpu" "$qemu" "$build/bin/$program" "$@" >"$work/$n.log" 2>&1 ||
      rc=$?
    echo "$rc $((SECONDS - start))" >"$work/$n.rc"
    echo "## $name (qemu -cpu $cpu): exit $rc after $((SECONDS - start)) s"
  ) &
}

if [ "$mode" = full ]; then
  # Every test of the four programs, every set by name (docs/arm64.md).
  suite "kernels, every AArch64 set" max test_cpu --gtest_brief=1
  suite "kernels, ARMv8.0 only" cortex-a53 test_cpu --gtest_brief=1
  suite "golden gates" max test_golden --gtest_brief=1
  suite "qwen35 gates" max test_host --gtest_brief=1 --gtest_filter='*Qwen35*'
  suite "conformance" max test_conformance --gtest_brief=1
else
  # CI: the kernel tests in full; every golden model's gates with the neon
  # set, one prefill each where dotprod (Q2_0, Q8_0 rows) and i8mm (SMMLA
  # Q1_0 tiles) run other kernels, tiny-q1's gates with the reference
  # kernels (emulated float64 is slow), the f16 KV cache and the qwen35
  # prompt gates of the layer kinds (both tiny qwen35 models, default
  # kernels) and of their MTP layer; conformance. The layer kinds'
  # state-rule tests (5 min emulated) and test_host's qwen35 gates per
  # kernel set are `full`'s: the first check host and plugin logic, which
  # the x86-64 suite runs, the second the kernels the prompt gates run.
  suite "kernels, every AArch64 set" max test_cpu --gtest_brief=1
  suite "kernels, ARMv8.0 only" cortex-a53 test_cpu --gtest_brief=1
  suite "golden gates" max test_golden --gtest_brief=1 --gtest_filter='TinyModels/Golden.*/*_neon:'\
'TinyModels/Golden.Prefill*/tiny_q2_dotprod:TinyModels/Golden.Prefill*/tiny_tq2_mixed_dotprod:'\
'TinyModels/Golden.Prefill*/tiny_q1_i8mm:TinyModels/Golden.*/tiny_q1_reference:'\
'TinyModels/KvCacheF16.*/tiny_q1_neon:TinyQwen35/LayerKinds.PromptLogits*:'\
'TinyQwen35/MtpLayerGolden.*'
  suite "conformance" max test_conformance --gtest_brief=1
fi
plugin="$build/lib/bonsai/plugins/libbonsai_cpu.so"
if [ "$mode" = full ]; then
  suite "bonsai-plugin-check" max bonsai-plugin-check "$plugin" --options kernels=i8mm
else
  suite "bonsai-plugin-check" max bonsai-plugin-check "$plugin" --options kernels=neon --no-golden
fi
suite "CPU plugin options, dotprod CPU" neoverse-n1 test_conformance --gtest_brief=1 --gtest_filter='CpuPlugin.*'
suite "CPU plugin options, ARMv8.0 CPU" cortex-a53 test_conformance --gtest_brief=1 --gtest_filter='CpuPlugin.*'
wait

failed=()
for n in "${!names[@]}"; do
  read -r rc seconds <"$work/$n.rc" || rc=1
  echo "## ${names[$n]}: exit $rc (${seconds:-?} s)"
  tail -n 25 "$work/$n.log"
  [ "$rc" = 0 ] || failed+=("${names[$n]}")
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "test-arm64: failed: ${failed[*]}" >&2
  exit 1
fi
echo "test-arm64: every suite passed in $SECONDS s"
