#!/usr/bin/env bash
# Installs what building (and, with `test`, testing) the project needs on Debian or Ubuntu, and
# says exactly what is missing elsewhere. ./run.sh runs `prereqs.sh build`, ./test.sh runs
# `prereqs.sh test`; each installs only packages that are not installed yet, as root or
# through sudo.
#
#   scripts/prereqs.sh build   CMake, Ninja, GCC, Maven, JDK 17, pip (to fetch zig), jemalloc
#   scripts/prereqs.sh test    the above, plus cmocka (C tests), clang (fuzzers), qemu-user and
#                              the aarch64 C library (the aarch64 build's smoke run), python3-venv
#                              and npm (the MongoDB adapter's pymongo and mongosh tests)
# Environment: PAR_JDK25_HOME, the JDK 22+ that compiles and tests the FFM backend
# (default /usr/lib/jvm/temurin-25-jdk-amd64).
set -euo pipefail

mode=${1:-build}
build_packages=(cmake ninja-build gcc libc6-dev binutils pkg-config maven openjdk-17-jdk-headless
                python3-pip libjemalloc2)
test_packages=(libcmocka-dev clang qemu-user libc6-arm64-cross python3-venv npm)
case "$mode" in
  build) packages=("${build_packages[@]}") ;;
  test) packages=("${build_packages[@]}" "${test_packages[@]}") ;;
  *) echo "usage: $0 build|test" >&2; exit 2 ;;
esac

jdk25=${PAR_JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
if [[ ! -x "$jdk25/bin/javac" ]]; then
  echo "prereqs: no JDK 22+ at $jdk25. The Java API's FFM backend is compiled and tested with" >&2
  echo "prereqs: JDK 25: install Eclipse Temurin 25 there (Adoptium's Debian repository, package" >&2
  echo "prereqs: temurin-25-jdk) or set PAR_JDK25_HOME to any JDK 22+." >&2
  exit 1
fi

if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
  echo "prereqs: not a Debian/Ubuntu system; make sure these (Debian names) are installed:" >&2
  echo "prereqs:   ${packages[*]}" >&2
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  # Node.js from elsewhere (NodeSource, nvm) ships its own npm: Debian's would conflict.
  [[ "$p" == npm ]] && command -v npm >/dev/null && continue
  if [[ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]]; then
    missing+=("$p")
  fi
done
((${#missing[@]} == 0)) && exit 0

sudo=()
if ((EUID != 0)); then
  if ! command -v sudo >/dev/null; then
    echo "prereqs: missing ${missing[*]}; as root run:" >&2
    echo "prereqs:   apt-get update && apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "prereqs: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# Slim Debian images drop /usr/share/man; the JDK's postinst needs man1 to register java.
"${sudo[@]}" mkdir -p /usr/share/man/man1
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q "${missing[@]}" </dev/null
