#!/usr/bin/env bash
# Prints the path of the zig compiler that builds the shipped libraries, fetching it first if
# this machine has none: the `ziglang` wheel from PyPI (the Zig project's own packaging of its
# release binaries), pinned by version and checksum, unpacked into a cache directory. zig's
# `cc` is clang with the C libraries of every target, so one x86_64 machine builds libraries
# for old glibc (2.17), musl and aarch64 without old machines or sysroots.
#
#   engine-native/tools/zig.sh            the path of zig (installs it on first use)
# Environment: PAR_ZIG (a zig to use instead), PAR_ZIG_CACHE (default ~/.cache/parallax-build).
set -euo pipefail

version=0.14.1
if [[ -n "${PAR_ZIG:-}" ]]; then
  echo "$PAR_ZIG"
  exit 0
fi

case "$(uname -m)" in
  x86_64)
    wheel=ziglang-$version-py3-none-manylinux_2_12_x86_64.manylinux2010_x86_64.musllinux_1_1_x86_64.whl
    platform=manylinux_2_12_x86_64
    sha256=6eb9d4d759b292c83810dbee2e9e8e3fbfbf01d864e6e9811bae711fd74e1c2f ;;
  aarch64)
    wheel=ziglang-$version-py3-none-manylinux_2_17_aarch64.manylinux2014_aarch64.musllinux_1_1_aarch64.whl
    platform=manylinux2014_aarch64
    sha256=7994b27f3cbfcedea43f9b7552e38b45857bdf0e9a45065474092dd74e7048cf ;;
  *)
    echo "zig.sh: no pinned zig for build machines of type $(uname -m); set PAR_ZIG to a zig $version" >&2
    exit 1 ;;
esac

cache=${PAR_ZIG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/parallax-build}
dir=$cache/zig-$version
zig=$dir/ziglang/zig
if [[ -x "$zig" ]]; then
  echo "$zig"
  exit 0
fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  echo "zig.sh: the shipped libraries are built with zig $version from PyPI, fetched with pip;" >&2
  echo "zig.sh: python3 -m pip is missing: sudo apt-get install python3-pip (or set PAR_ZIG)" >&2
  exit 1
fi
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.zig-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "zig.sh: fetching zig $version (PyPI package ziglang) into $dir" >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: --platform "$platform" \
  --python-version 3.11 --dest "$tmp" "ziglang==$version" >&2
actual=$(sha256sum "$tmp/$wheel" | cut -d' ' -f1)
if [[ "$actual" != "$sha256" ]]; then
  echo "zig.sh: $wheel has checksum $actual, expected $sha256" >&2
  exit 1
fi
python3 -m zipfile -e "$tmp/$wheel" "$tmp/unpacked"
chmod +x "$tmp/unpacked/ziglang/zig"
rm -rf "$dir"
mv "$tmp/unpacked" "$dir"
echo "$zig"
