#!/usr/bin/env bash
# Builds the engine (Release, no tests) and runs par_bench, the small default benchmark.
# Arguments are passed to par_bench. Installs nothing: it says what is missing instead.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

missing=()
for tool in mvn java cmake ninja gcc pkg-config; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if command -v pkg-config >/dev/null 2>&1 && ! pkg-config --exists cmocka; then
  missing+=("cmocka (libcmocka-dev)")
fi
if ((${#missing[@]} > 0)); then
  echo "run.sh: missing: ${missing[*]}" >&2
  echo "run.sh: on Debian/Ubuntu: sudo apt-get install cmake ninja-build gcc libcmocka-dev pkg-config libjemalloc2 maven openjdk-17-jdk-headless" >&2
  exit 1
fi

mvn -B -q -ntp package -DskipTests

bench=engine-native/target/cmake-release/par_bench
multiarch=$(gcc -print-multiarch 2>/dev/null || true)
jemalloc=/usr/lib/${multiarch:-x86_64-linux-gnu}/libjemalloc.so.2
if [[ -e "$jemalloc" ]]; then
  echo "run.sh: $bench $* (allocator: jemalloc, LD_PRELOAD=$jemalloc)"
  exec env LD_PRELOAD="$jemalloc" "$bench" "$@"
else
  echo "run.sh: $bench $* (allocator: glibc malloc; install libjemalloc2 to benchmark with jemalloc)"
  exec "$bench" "$@"
fi
