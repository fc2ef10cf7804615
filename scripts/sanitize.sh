#!/usr/bin/env bash
# Sanitizer runs, each in its own build folder:
#  1. ASan + UBSan (BONSAI_SANITIZE=address): everything built into
#     ./build-asan and the test suite run there (all but the browser, npm
#     client and NVRTC suites, the load test, and slow tests whose code
#     faster tests run under ASan too, see below). The suites' own sources
#     are built without instrumentation (tests/CMakeLists.txt).
#  2. TSan (BONSAI_SANITIZE=thread): the host library and the threaded host
#     tests (two sessions in two threads, cancellation from another thread,
#     all EngineCpu tests), and the server's tests (its I/O thread, parse
#     workers and scheduler thread; the same slow replies left out),
#     built into ./build-tsan and run there. The CPU
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

# Replies of the tiny model over the 151,936-token vocabulary that take
# 25-45 s each under ASan (grammar masks, drafts and samples on every token)
# and whose code the faster tests beside them run under the sanitizers too:
# constrained drafting (StructuredOutput.*, ServeSpeculative.ADraftThat...),
# batched drafting (BatchCpu.*, Speculative.*), sampling with the MTP layer
# (MtpDraft.GreedyRepliesAreTheGoldenOnes, the sampler's own tests), the
# ABI 1.0 plugin's batch (Abi10Plugin.*). They run in the plain build.
slow_replies=(
  'test_server\.ServeSpeculative\.(ConstrainedRepliesDraftAndKeepThePlainReply|StreamsOfOneBatchEachDraftAndVerifyOnTheirOwn)'
  'test_server\.StructuredOutput\.RandomWeightsStillReplyWithValidJson'
  'test_host\.MtpDraft\.SamplingWithTheLayerKeepsTheDistribution'
  'test_host\.BatchAbi10Plugin\.SequencesSteppedOneByOneDecodeTheGoldenGreedyContinuation'
)
# Joins ctest name patterns into one anchored alternation.
any_of() { (IFS='|'; echo "^($*)\$"); }

for step in "${steps[@]}"; do
  case "$step" in
  asan)
    build="${BONSAI_ASAN_BUILD_DIR:-$root/build-asan}"
    configure "$build" address
    cmake --build "$build"
    # Leaks fail the run; UBSan findings abort (-fno-sanitize-recover).
    # Some tests run in the plain build only, where ASan adds little and
    # costs CI minutes (the sanitizer stage had grown to most of CI's time):
    plain_only=(
      # the chat page's work is in the browser;
      'server\.webui'
      # the npm clients (the OpenAI client's 40 constrained replies took
      # three minutes here, the schema corpus sends 144; the Responses,
      # Anthropic and Ollama clients): their endpoints' code runs under ASan
      # in process in test_server (StructuredOutput, ServerResponses,
      # ServerMessages, ServerOllama, ServerApiHardening), and the schema
      # compiler in test_constrain;
      'server\.(openai_client_structured|schema_corpus|responses_client|anthropic_client|ollama_client|ollama_client_tools)'
      # the agent programs (tests/clients) and the manifests' validators: the
      # server code they reach runs under ASan in test_server
      # (Compatibility, ClaudeCodeShapes, AgentFormats, RouterMetrics);
      'clients\..*' 'deploy\.manifests'
      # the NVRTC compiles of every program for four architectures spend
      # their time in NVRTC and ptxas, which are not instrumented;
      'test_cuda\.(Arch/)?KernelPrograms\..*'
      # ServerLoad's load runs alone (72 s) and runs under TSan too; the SDK
      # check builds the examples with the system compiler;
      'test_server\.ServerLoad\..*' 'sdk\.install_build_and_run_examples'
      "${slow_replies[@]}"
    )
    # malloc_context_size=8: the allocation and free stacks of a report keep
    # 8 frames instead of 30 (the access's own stack is whole); unwinding 30
    # on every malloc was 10-20 % of the JSON- and grammar-heavy tests' time.
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:malloc_context_size=8" \
    UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1" \
      ctest --test-dir "$build" --output-on-failure -j "$jobs" -E "$(any_of "${plain_only[@]}")"
    ;;
  tsan)
    build="${BONSAI_TSAN_BUILD_DIR:-$root/build-tsan}"
    configure "$build" thread
    cmake --build "$build" --target test_host test_server bonsai_cpu
    # The CPU plugin is built without TSan (see the top CMakeLists.txt): its
    # TBB kernels are invisible, and so are the memset/memcpy calls it makes.
    TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:ignore_noninstrumented_modules=1" \
      ctest --test-dir "$build" --output-on-failure -j "$jobs" -R '^(test_host\.EngineCpu\.|test_server\.)' \
      -E "$(any_of "${slow_replies[@]}")"
    ;;
  *)
    echo "usage: $0 [asan] [tsan]" >&2
    exit 2
    ;;
  esac
done
