#!/usr/bin/env bash
# Builds the libparallax.so files that the engine-java jar ships, one per platform, with zig's
# clang and the oldest C library each platform supports, so that one jar loads on the Linux
# machines JVM users run (RHEL/CentOS 7+, Ubuntu 14.04+, Amazon Linux 2, Debian 8+, Alpine):
#
#   linux-x86_64        x86_64-linux-gnu.2.17     glibc >= 2.17
#   linux-aarch64       aarch64-linux-gnu.2.17    glibc >= 2.17
#   linux-x86_64-musl   x86_64-linux-musl         musl (Alpine)
#
#   build-portable.sh OUT_DIR BUILD_ROOT JAVA_HOME [PLATFORM...]
# writes OUT_DIR/<platform>/libparallax.so (and par_bench, for the smoke runs) from build trees
# in BUILD_ROOT/cmake-<platform>. JAVA_HOME supplies jni.h (its Linux jni_md.h is the same on
# every architecture). Maven's engine-native compile phase runs it (see pom.xml).
set -euo pipefail

if (($# < 3)); then
  echo "usage: $0 OUT_DIR BUILD_ROOT JAVA_HOME [PLATFORM...]" >&2
  exit 2
fi
out=$1
build_root=$2
java_home=$3
shift 3
platforms=("$@")
((${#platforms[@]} > 0)) || platforms=(linux-x86_64 linux-aarch64 linux-x86_64-musl)

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(dirname "$here")
zig=$("$here/zig.sh")

target_of() {
  case "$1" in
    linux-x86_64) echo x86_64-linux-gnu.2.17 ;;
    linux-aarch64) echo aarch64-linux-gnu.2.17 ;;
    linux-x86_64-musl) echo x86_64-linux-musl ;;
    *) echo "build-portable.sh: unknown platform $1" >&2; return 1 ;;
  esac
}

for platform in "${platforms[@]}"; do
  target=$(target_of "$platform")
  build=$build_root/cmake-$platform
  mkdir -p "$build" "$out/$platform"
  # CMake wants one executable as the compiler: a wrapper that names the target.
  printf '#!/bin/sh\nexec "%s" cc -target %s "$@"\n' "$zig" "$target" >"$build/cc"
  printf '#!/bin/sh\nexec "%s" ar "$@"\n' "$zig" >"$build/ar"
  chmod +x "$build/cc" "$build/ar"
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DPAR_WERROR=ON \
    -DCMAKE_C_COMPILER="$build/cc" -DCMAKE_AR="$build/ar" \
    -DCMAKE_SHARED_LINKER_FLAGS=-Wl,--strip-debug -DCMAKE_EXE_LINKER_FLAGS=-Wl,--strip-debug \
    -DPAR_BUILD_TESTS=OFF -DJAVA_HOME="$java_home" >"$build/configure.log" ||
    { cat "$build/configure.log" >&2; exit 1; }
  cmake --build "$build" --target parallax par_bench
  cp "$build/libparallax.so" "$build/par_bench" "$out/$platform/"
  echo "build-portable.sh: $platform ($target): $out/$platform/libparallax.so"
done
