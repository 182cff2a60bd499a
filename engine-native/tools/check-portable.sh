#!/usr/bin/env bash
# Checks the libraries build-portable.sh made, as the jar will ship them:
#  - each is an ELF shared object for its machine;
#  - the glibc ones need no symbol version newer than GLIBC_2.17 (objdump -T), the musl one
#    none at all and libc.so (musl's loader answers to that name);
#  - each exports the C API and the JNI bridge;
#  - each platform's par_bench, built from the same objects, loads a small volume through several
#    compactions and reads every pair back: natively for x86_64 (glibc, and musl as a static
#    executable), under qemu-user for aarch64.
# Maven runs it in engine-native's test phase.
#
#   check-portable.sh DIST_DIR
set -euo pipefail

dist=${1:?usage: $0 DIST_DIR}
floor=2.17
fail=0
problem() { echo "check-portable: $*" >&2; fail=1; }

machine_of() {
  case "$1" in
    linux-aarch64) echo AArch64 ;;
    *) echo X86-64 ;;
  esac
}

for platform in linux-x86_64 linux-aarch64 linux-x86_64-musl; do
  lib=$dist/$platform/libparallax.so
  [[ -f "$lib" ]] || { problem "$lib is missing"; continue; }
  header=$(readelf -h "$lib")
  grep -q 'Type: *DYN' <<<"$header" || problem "$lib is not a shared object"
  grep -q "Machine: *.*$(machine_of "$platform")" <<<"$header" ||
    problem "$lib is not built for $(machine_of "$platform")"

  newest=
  symbols=$(objdump -T "$lib")
  versions=$(grep -o 'GLIBC_[0-9][0-9.]*' <<<"$symbols" | sort -u -V || true)
  needed=$(readelf -d "$lib" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')
  if [[ "$platform" == *-musl ]]; then
    [[ -z "$versions" ]] || problem "$lib (musl) refers to glibc versions: $versions"
    [[ " $needed" == *" libc.so "* ]] || problem "$lib (musl) needs [$needed], not libc.so"
  else
    newest=$(tail -n 1 <<<"$versions")
    newest=${newest#GLIBC_}
    if [[ -z "$newest" ]] ||
       [[ "$(printf '%s\n%s\n' "$floor" "$newest" | sort -V | tail -n 1)" != "$floor" ]]; then
      problem "$lib needs GLIBC_$newest, newer than the supported floor GLIBC_$floor:"
      grep "GLIBC_$newest" <<<"$symbols" >&2 || true
    fi
  fi
  for sym in par_open par_get Java_io_parallaxkv_internal_JniNative_layout; do
    grep -q "[[:space:]]$sym\$" <<<"$symbols" || problem "$lib does not export $sym"
  done
  echo "check-portable: $platform: $(machine_of "$platform"), newest symbol version" \
    "${newest:-none} (floor $floor), needs: $needed"
done

smoke() {
  local platform=$1
  shift
  local dir
  dir=$(mktemp -d "$dist/smoke-$platform-XXXXXX")
  # A 4 MiB L0 makes the load go through several flushes and spills, and the SD mix through
  # all three placements (in leaves, medium log, large log).
  if "$@" "$dist/$platform/par_bench" --dir "$dir" --keys 60000 --mix SD --l0-size 4194304 \
       --verify >"$dir.log" 2>&1; then
    echo "check-portable: $platform: par_bench load and verify ok${*:+ (under $*)}"
  else
    problem "$platform: par_bench failed${*:+ under $*}:"
    tail -n 20 "$dir.log" >&2
  fi
  rm -rf "$dir" "$dir.log"
}

smoke linux-x86_64
smoke linux-x86_64-musl
if command -v qemu-aarch64 >/dev/null && [[ -d /usr/aarch64-linux-gnu/lib ]]; then
  smoke linux-aarch64 qemu-aarch64 -L /usr/aarch64-linux-gnu
elif [[ "${CI:-}" == true ]]; then
  problem "qemu-user or the aarch64 C library is missing (scripts/prereqs.sh test installs them)"
else
  echo "check-portable: linux-aarch64: not run (needs qemu-user and libc6-arm64-cross)"
fi
exit "$fail"
