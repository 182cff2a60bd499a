#!/usr/bin/env bash
# The C-level baseline of the JMH benchmarks: builds src/main/c/par_op_bench.c against the
# libparallax.so that `mvn package` built and runs it (glibc malloc, like the JVM runs).
# usage: benchmarks/native-baseline.sh [N] [SECS] [ITERS] [WARMUP] [SIZES...]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
lib="$root/engine-native/target/cmake-release"
[[ -e "$lib/libparallax.so" ]] || { echo "native-baseline.sh: no $lib/libparallax.so; run mvn -B -ntp package -DskipTests first" >&2; exit 1; }
mkdir -p "$here/target"
cc -O2 -std=c11 -Wall -Wextra -I "$root/engine-native/include" -o "$here/target/par_op_bench" \
  "$here/src/main/c/par_op_bench.c" -L "$lib" -lparallax -Wl,-rpath,"$lib"
dir=$(mktemp -d "${TMPDIR:-/tmp}/par-op-bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$here/target/par_op_bench" "$dir" "$@"
