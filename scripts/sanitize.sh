#!/usr/bin/env bash
# Sanitizer runs, each in its own build folder:
#  1. ASan + UBSan (BONSAI_SANITIZE=address): everything built into
#     ./build-asan and the test suite run there (all but two end-to-end
#     tests, see below).
#  2. TSan (BONSAI_SANITIZE=thread): the host library and the threaded host
#     tests (two sessions in two threads, cancellation from another thread,
#     all EngineCpu tests), and the server's tests (its I/O thread, parse
#     workers and scheduler thread), built into ./build-tsan and run there. The CPU
#     plugin they load is built without TSan: Debian's libtbb is not
#     instrumented, so TSan would report every TBB hand-off as a race.
# Either step alone: scripts/sanitize.sh asan | scripts/sanitize.sh tsan
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(asan tsan)
jobs="$(nproc)"
"$root/scripts/install-deps.sh"

# -O1 -g1 rather than RelWithDebInfo's -O2 -g: the ASan build took 975 s
# instead of 1,361 s on 2 cores (the sanitizer builds were most of CI's time),
# reports still name file and line, and the sanitizers' own documentation
# builds at -O1.
configure() { # folder, sanitizer mode
  if [ ! -f "$1/build.ninja" ]; then
    cmake -S "$root" -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
      -DBONSAI_SANITIZE="$2" -DBONSAI_BUILD_BENCHMARKS=OFF
  fi
}

for step in "${steps[@]}"; do
  case "$step" in
  asan)
    build="${BONSAI_ASAN_BUILD_DIR:-$root/build-asan}"
    configure "$build" address
    cmake --build "$build"
    # Leaks fail the run; UBSan findings abort (-fno-sanitize-recover).
    # Some tests run in the plain build only, where ASan adds little and
    # costs CI minutes: the chat page's work is in the browser; the OpenAI
    # client's 40 constrained replies took three minutes here, and the schema
    # corpus sends 144 (the server's structured output runs under ASan in
    # process, StructuredOutput.*, and the compiler in test_constrain); the
    # Responses, Anthropic and Ollama clients' suites run their endpoints'
    # code, which test_server's ServerResponses, ServerMessages, ServerOllama
    # and ServerApiHardening run under ASan in process; the
    # NVRTC compiles of every program for four architectures spend their
    # time in NVRTC and ptxas, which are not instrumented (52 s for
    # compute_90 alone); ServerLoad's load runs alone, 72 s, and runs under
    # TSan too; the SDK check builds the examples with the system compiler.
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      ctest --test-dir "$build" --output-on-failure -j "$jobs" \
      -E '^(server\.(webui|openai_client_structured|schema_corpus|responses_client|anthropic_client|ollama_client|ollama_client_tools)|test_cuda\.(Arch/)?KernelPrograms\..*|test_server\.ServerLoad\..*|sdk\.install_build_and_run_examples)$'
    ;;
  tsan)
    build="${BONSAI_TSAN_BUILD_DIR:-$root/build-tsan}"
    configure "$build" thread
    cmake --build "$build" --target test_host test_server bonsai_cpu
    # The CPU plugin is built without TSan (see the top CMakeLists.txt): its
    # TBB kernels are invisible, and so are the memset/memcpy calls it makes.
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1" \
      ctest --test-dir "$build" --output-on-failure -j "$jobs" -R '^(test_host\.EngineCpu\.|test_server\.)'
    ;;
  *)
    echo "usage: $0 [asan] [tsan]" >&2
    exit 2
    ;;
  esac
done
