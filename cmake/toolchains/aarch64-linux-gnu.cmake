# Cross-compiles bonsai for 64-bit ARM Linux on a Debian x86-64 machine with
# Debian's cross compiler (g++-aarch64-linux-gnu) and the arm64 libraries
# installed through multiarch (scripts/install-deps.sh arm64):
#   cmake -S . -B build-arm64 -G Ninja \
#     -DCMAKE_TOOLCHAIN_FILE=cmake/toolchains/aarch64-linux-gnu.cmake
# scripts/test-arm64.sh builds and tests this way under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

# Multiarch: the arm64 libraries and their CMake packages live in
# /usr/lib/aarch64-linux-gnu (searched through CMAKE_LIBRARY_ARCHITECTURE,
# never the host's x86_64 folder) and share /usr/include with the host's.
# pkg-config must read the arm64 .pc files, not the host's.
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
set(ENV{PKG_CONFIG_PATH} "")

# Test programs run under the emulator (gtest_discover_tests, ctest), on the
# multiarch loader and C library (not qemu -L /usr/aarch64-linux-gnu, whose
# glibc is another build: scripts/test-arm64.sh says why that fails).
find_program(BONSAI_QEMU_AARCH64 NAMES qemu-aarch64-static qemu-aarch64)
if(BONSAI_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${BONSAI_QEMU_AARCH64})
endif()
