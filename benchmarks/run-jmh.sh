#!/usr/bin/env bash
# Runs the JMH binding-overhead benchmarks the way docs/benchmarks.md reports them, plus the
# C baseline, writing logs and JSON to benchmarks/target/jmh-results/. Build first:
#   mvn -B -ntp -q package -DskipTests
# Knobs (environment): JDK25 (a JDK 22+ home, for FFM), JDK17 (java for JNI; default: `java`),
# JMH_OPTS (default "-f 1 -wi 2 -w 2s -i 3 -r 3s").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
jar="$here/target/benchmarks.jar"
out="$here/target/jmh-results"
j25="${JDK25:-/usr/lib/jvm/temurin-25-jdk-amd64}/bin/java"
j17="${JDK17:-java}"
opts=(${JMH_OPTS:--f 1 -wi 2 -w 2s -i 3 -r 3s})
[[ -e "$jar" ]] || { echo "run-jmh.sh: no $jar; run mvn -B -ntp -q package -DskipTests" >&2; exit 1; }
mkdir -p "$out"
# JMH 1.37 uses sun.misc.Unsafe; JDK 24+ warns about it unless told to allow it.
quiet25=(-jvmArgsAppend --sun-misc-unsafe-memory-access=allow)

jmh() { # name java args...
  local name=$1 java=$2; shift 2
  echo "== $name: $java -jar benchmarks.jar ${opts[*]} $*"
  "$java" -jar "$jar" "${opts[@]}" -rf json -rff "$out/$name.json" "$@" > "$out/$name.log" 2>&1
  sed -n '/^Benchmark /,$p' "$out/$name.log"
}

# 1. FFM (JDK 25) and RocksJava side by side on JDK 25.
jmh ffm-main "$j25" "${quiet25[@]}" -p backend=ffm \
  'ParallaxBench|RocksDbBench|NativeOverheadBench.raw(Get|Put)'
jmh ffm-exists "$j25" "${quiet25[@]}" -p backend=ffm -p valueSize=100 'NativeOverheadBench.*ExistsAbsent'
# 2. The C cost of the same operations.
echo "== native baseline"
"$here/native-baseline.sh" 100000 3 3 4 | tee "$out/native.log"
# 3. JNI on JDK 17, and RocksJava gets of 100 B values on the same JDK.
jmh jni-main "$j17" -p backend=jni 'ParallaxBench|NativeOverheadBench.raw(Get|Put)'
jmh jni-exists "$j17" -p backend=jni -p valueSize=100 'NativeOverheadBench.*ExistsAbsent'
jmh jni-rocks "$j17" -p valueSize=100 'RocksDbBench.get'
# 4. JNI on JDK 25 for 100 B values: FFM vs JNI on the same JIT.
jmh jni25 "$j25" "${quiet25[@]}" -p backend=jni -p valueSize=100 \
  'ParallaxBench.get|NativeOverheadBench.(rawGet|rawPut|.*ExistsAbsent)'
# 5. 100 B values, everything side by side in one JDK 25 session (FFM, JNI, RocksJava, C).
jmh side-by-side-100 "$j25" "${quiet25[@]}" -p backend=ffm,jni -p valueSize=100 \
  'ParallaxBench|RocksDbBench|NativeOverheadBench'
echo "== native baseline, 100 B"
"$here/native-baseline.sh" 100000 3 3 4 100 | tee "$out/native-100.log"
# 6. Scan-next and scan-prev (single thread, L0 and flushed to the device levels), then
#    get/put/scan with 2 threads: FFM, JNI and RocksJava on JDK 25, byte[] and direct-ByteBuffer
#    variants, all value sizes.
jmh scan-1t "$j25" "${quiet25[@]}" -p backend=ffm,jni -p flushed=false,true \
  'ParallaxBench.scan(Next|Prev)|RocksDbBench.scanNext'
jmh threads-2 "$j25" "${quiet25[@]}" -t 2 -p backend=ffm,jni 'ParallaxBench|RocksDbBench'
