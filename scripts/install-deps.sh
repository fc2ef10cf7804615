#!/usr/bin/env bash
# Installs the Debian 12 packages bonsai builds with. Idempotent: does nothing
# when every package is already present. Runs as root, or through sudo.
#   scripts/install-deps.sh          the build, tests and benchmarks
#   scripts/install-deps.sh program  only what the bonsai program, its plugins
#                                    and bonsai-gguf need (the demo)
#   scripts/install-deps.sh fuzz     also clang and its libFuzzer runtime
set -euo pipefail
# The program, the plugins and bonsai-gguf.
program_packages=(
  build-essential cmake ninja-build pkg-config ccache
  libboost-dev libboost-program-options-dev libboost-filesystem-dev
  libspdlog-dev libfmt-dev libtbb-dev libpcre2-dev libutf8proc-dev
  libedit-dev nlohmann-json3-dev
)
# The tests and benchmarks: GoogleTest, Google Benchmark, an HTTP client and
# zlib for the server's tests and benches, python3 for the docs checks,
# Chromium, in which the chat page's tests run headless, and venv, pytest,
# setuptools and wheel for the Python package's test (python.pytest).
test_packages=(
  python3 libgtest-dev libgmock-dev libbenchmark-dev libcpp-httplib-dev zlib1g-dev
  chromium python3-venv python3-pytest python3-setuptools python3-wheel
)
packages=("${program_packages[@]}")
groups=("$@")
[ ${#groups[@]} -eq 0 ] && groups=(tests)
for group in "${groups[@]}"; do
  case "$group" in
  program) ;;
  tests)
    packages+=("${test_packages[@]}")
    # Node.js and npm run the OpenAI-client test of `bonsai serve`; a machine
    # that already has them (from any source) keeps its own.
    if ! command -v npm >/dev/null 2>&1; then
      packages+=(nodejs npm)
    fi
    ;;
  fuzz) packages+=("${test_packages[@]}" clang libclang-rt-14-dev) ;;
  *)
    echo "install-deps: unknown package group '$group' (known: program, tests, fuzz)" >&2
    exit 2
    ;;
  esac
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "install-deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
