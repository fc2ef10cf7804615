#!/usr/bin/env bash
# Installs the Debian 12 packages bonsai builds with. Idempotent: does nothing
# when every package is already present. Runs as root, or through sudo.
#   scripts/install-deps.sh          the build, tests and benchmarks
#   scripts/install-deps.sh program  only what the bonsai program, its plugins
#                                    and bonsai-gguf need (the demo)
#   scripts/install-deps.sh fuzz     also clang and its libFuzzer runtime
#   scripts/install-deps.sh container  podman, runc and debootstrap
#                                    (scripts/test-container.sh)
#   scripts/install-deps.sh arm64    the aarch64 cross compiler, the arm64
#                                    libraries (Debian multiarch) and
#                                    qemu-user-static (scripts/test-arm64.sh)
#   scripts/install-deps.sh scaleout HAProxy, Prometheus (with promtool) and
#                                    iproute2 (scripts/test-scaleout.sh)
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
# The cross build for 64-bit ARM (scripts/test-arm64.sh): the arm64 builds of
# the libraries the program and the tests link, and the emulator the tests
# run under. nlohmann-json and the host's build tools come from the program's list.
arm64_packages=(
  g++-aarch64-linux-gnu qemu-user-static
  libboost-dev:arm64 libboost-program-options-dev:arm64 libboost-filesystem-dev:arm64
  libspdlog-dev:arm64 libfmt-dev:arm64 libtbb-dev:arm64 libpcre2-dev:arm64
  libutf8proc-dev:arm64 libedit-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
  libcpp-httplib-dev:arm64
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
  arm64) packages+=("${arm64_packages[@]}") ;;
  container) packages+=(podman runc debootstrap python3) ;;
  scaleout) packages+=(haproxy prometheus iproute2 python3) ;;
  *)
    echo "install-deps: unknown package group '$group' (known: program, tests, fuzz, arm64, container, scaleout)" >&2
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
# arm64 packages need the architecture known to dpkg before the update.
if printf '%s\n' "${missing[@]}" | grep -q ':arm64$' &&
  ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $sudo dpkg --add-architecture arm64
fi
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
