#!/bin/sh
# The server's cost per operation over the raw engine: YCSB Load A, Run A and Run C (2 client
# threads, zipfian, 10 x 100-byte fields) through YCSB's mongodb binding against this server,
# then through the raw engine's Java API (the benchmarks module's ParallaxClient, in the YCSB
# client's JVM), one after the other, page-cache mode.
#   mongo-adapter/bench/ycsb-over-engine.sh [RECORDS] [RUN_SECONDS]
# Needs `mvn -pl mongo-adapter -am test-compile` and `mvn -pl benchmarks -am -DskipTests package`
# first, and the binding in ../shared/ycsb-bindings. Results: target/ycsb-over-engine/summary.txt.
set -eu
cd "$(dirname "$0")/.."
RECORDS=${1:-300000}
SECONDS_PER_RUN=${2:-60}
OUT=target/ycsb-over-engine
rm -rf "$OUT"; mkdir -p "$OUT"
mvn -B -ntp -o -q dependency:build-classpath -Dmdep.outputFile="$OUT/cp.txt" >/dev/null
ENGINE_JAR=$(ls ../engine-java/target/parallax-engine-*-SNAPSHOT.jar | grep -v -e sources -e javadoc)
SERVER_CP="target/classes:$(sed "s#[^:]*parallax-engine[^:]*#$ENGINE_JAR#" "$OUT/cp.txt")"
YCSB_LIB="$(ls target/ycsb-lib/*.jar | tr '\n' ':')"
MONGO_CP="../../shared/ycsb-bindings/mongodb-binding.jar:$YCSB_LIB"
RAW_CP="../benchmarks/target/classes:$ENGINE_JAR:$YCSB_LIB"
PORT=27095

phases() { # NAME CLASSPATH DB-ARGS...
  name=$1; cp=$2; shift 2
  for phase in loadA runA runC; do
    case $phase in
      loadA) args="-load" ;;
      runA) args="-t -p readproportion=0.5 -p updateproportion=0.5 -p maxexecutiontime=$SECONDS_PER_RUN" ;;
      runC) args="-t -p readproportion=1 -p updateproportion=0 -p maxexecutiontime=$SECONDS_PER_RUN" ;;
    esac
    # shellcheck disable=SC2086
    nice java -Xmx1g -cp "$cp" site.ycsb.Client $args "$@" -s -threads 2 \
      -p workload=site.ycsb.workloads.CoreWorkload -p recordcount="$RECORDS" \
      -p operationcount=100000000 -p requestdistribution=zipfian > "$OUT/$name-$phase.txt" 2> "$OUT/$name-$phase.err"
    echo "$name $phase: $(grep -E '^\[(OVERALL\], Throughput|(READ|UPDATE|INSERT)\], AverageLatency)' "$OUT/$name-$phase.txt" | tr '\n' ' ')load average $(cut -d' ' -f1-3 /proc/loadavg)" \
      | tee -a "$OUT/summary.txt"
  done
}

echo "records=$RECORDS run_seconds=$SECONDS_PER_RUN page-cache mode $(date -u)" >> "$OUT/summary.txt"
nice java -Xmx1g -cp "$SERVER_CP" io.parallaxkv.mongo.ServerCommand --dbpath "$OUT/data-server" \
  --port $PORT > "$OUT/server.log" 2>&1 &
SERVER_PID=$!
for _ in $(seq 1 100); do grep -q listening "$OUT/server.log" && break; sleep 0.2; done
phases server "$MONGO_CP" -db site.ycsb.db.MongoDbClient -p mongodb.url="mongodb://127.0.0.1:$PORT/ycsb?w=1"
kill "$SERVER_PID"; wait "$SERVER_PID" || true
mkdir -p "$OUT/data-raw"
phases raw "$RAW_CP" -db io.parallaxkv.ycsb.ParallaxClient -p parallax.dir="$OUT/data-raw"
