#!/usr/bin/env bash
# Builds everything (Release, no tests) and runs the YCSB runner: Parallax vs RocksDB vs BlobDB,
# Load A and Run A-F. Arguments go to the runner (./run.sh --help); with none it runs its
# default SD comparison (at equal memory where it can). `./run.sh --par-bench [args]` runs par_bench.
# Installs what the build needs first (scripts/prereqs.sh build: apt packages as root or through
# sudo; it says what to run where it cannot). Needs no JAVA_HOME: Maven's own JDK builds the JNI
# bridge, and the FFM backend is built with the JDK 25 at $PAR_JDK25_HOME.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

jdk25=${PAR_JDK25_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}
scripts/prereqs.sh build

mvn -B -q -ntp package -DskipTests -Dpar.jdk25.home="$jdk25"

multiarch=$(gcc -print-multiarch 2>/dev/null || true)
jemalloc=/usr/lib/${multiarch:-x86_64-linux-gnu}/libjemalloc.so.2

if [[ "${1:-}" == "--par-bench" ]]; then
  shift
  bench=engine-native/target/cmake-release/par_bench
  if [[ -e "$jemalloc" ]]; then
    echo "run.sh: $bench $* (allocator: jemalloc, LD_PRELOAD=$jemalloc)"
    exec env LD_PRELOAD="$jemalloc" "$bench" "$@"
  fi
  echo "run.sh: $bench $* (allocator: glibc malloc; install libjemalloc2 to benchmark with jemalloc)"
  exec "$bench" "$@"
fi

# With no arguments: the default comparison at equal memory. 2 M SD records (about 0.7 GB of
# volume) and each engine's JVM limited to 256 MiB, page cache included, so most reads go to the
# device as they do in production; where no memory cgroup can be made (the runner's
# --memory-mode auto) the same run in page-cache mode, labelled so.
if [[ $# -eq 0 ]]; then
  set -- --records 2000000 --operations 100000 --scan-operations 10000 --cgroup-limit 256m \
    --jvm-opts "-Xms64m -Xmx64m" --memory-budget 32m --l0-size 16m
fi

# The runner's child JVMs run on the same JDK 25 (FFM backend) and preload jemalloc when it is
# installed (--allocator auto). Its console output is UTF-8 (the tables' "×") whatever the
# locale, as its result files are: without a locale Java would print "?".
echo "run.sh: YCSB runner on $jdk25 $*"
exec "$jdk25/bin/java" -Dstdout.encoding=UTF-8 -cp benchmarks/target/benchmarks.jar io.parallaxkv.ycsb.runner.YcsbRunner "$@"
