#!/bin/sh
# YCSB's own mongodb binding against this server and against mongo-java-server with its on-disk
# H2 MVStore backend (H2PeerServer), one after the other, same machine, same client.
#   mongo-adapter/bench/ycsb-side-by-side.sh [RECORDS] [RUN_SECONDS] [MEMORY_LIMIT]
# Load A (RECORDS documents of 10 x 100-byte fields, 2 client threads), then Run A, C and E for
# RUN_SECONDS each (YCSB's maxexecutiontime). With MEMORY_LIMIT (e.g. 2g) each server JVM runs in
# a cgroup v1 memory group of that limit (equal memory; page cache charged too); without it,
# page-cache mode. HEAP (environment, default 1g) is each server's -Xmx. Needs `mvn -pl mongo-adapter -am test-compile` (or package) first and the
# binding in ../shared/ycsb-bindings. Results: target/ycsb-side-by-side/*.txt.
set -eu
cd "$(dirname "$0")/.."
RECORDS=${1:-1000000}
SECONDS_PER_RUN=${2:-120}
LIMIT=${3:-}
HEAP=${HEAP:-1g}
OUT=target/ycsb-side-by-side
BINDING=../../shared/ycsb-bindings/mongodb-binding.jar
mkdir -p "$OUT"
mvn -B -ntp -o -q dependency:build-classpath -Dmdep.includeScope=test -Dmdep.outputFile="$OUT/cp.txt" >/dev/null
ENGINE_JAR=$(ls ../engine-java/target/parallax-engine-*-SNAPSHOT.jar | grep -v -e sources -e javadoc)
SERVER_CP="target/classes:target/test-classes:$(sed "s#[^:]*parallax-engine[^:]*#$ENGINE_JAR#" "$OUT/cp.txt")"
YCSB_CP="$BINDING:$(ls target/ycsb-lib/*.jar | tr '\n' ':')"
PORT=27091

start_server() { # NAME MAIN ARGS...
  name=$1; shift
  rm -rf "$OUT/data-$name"; mkdir -p "$OUT/data-$name"
  if [ -n "$LIMIT" ]; then
    group=/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)/ycsb-mongo-$$-$name
    mkdir -p "$group"; echo "$LIMIT" | tr a-z A-Z | numfmt --from=iec > "$group/memory.limit_in_bytes"
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group" nice java -Xmx"$HEAP" -cp "$SERVER_CP" "$@" > "$OUT/server-$name.log" 2>&1 &
  else
    nice java -Xmx"$HEAP" -cp "$SERVER_CP" "$@" > "$OUT/server-$name.log" 2>&1 &
  fi
  SERVER_PID=$!
  for _ in $(seq 1 100); do grep -q listening "$OUT/server-$name.log" && return; sleep 0.2; done
  echo "server $name did not start:"; cat "$OUT/server-$name.log"; exit 1
}

stop_server() { # NAME
  kill "$SERVER_PID"; wait "$SERVER_PID" || true
  if [ -n "$LIMIT" ]; then
    echo "$1 cgroup peak bytes: $(cat "$group/memory.max_usage_in_bytes")" >> "$OUT/summary.txt"
    echo 0 > "$group/memory.force_empty" # its page cache goes with it, not to the next server
    rmdir "$group"
  fi
}

ycsb() { # NAME PHASE WORKLOAD-PROPERTIES...
  name=$1; phase=$2; shift 2
  nice java -cp "$YCSB_CP" site.ycsb.Client "$phase" -db site.ycsb.db.MongoDbClient -s \
    -p mongodb.url="mongodb://127.0.0.1:$PORT/ycsb?w=1" -p workload=site.ycsb.workloads.CoreWorkload \
    -p recordcount="$RECORDS" -threads 2 "$@" > "$OUT/$name-$label.txt" 2> "$OUT/$name-$label.err"
  echo "$name $label: $(grep -E '^\[OVERALL\], Throughput' "$OUT/$name-$label.txt")" | tee -a "$OUT/summary.txt"
}

run_all() { # NAME
  label=loadA; ycsb "$1" -load -p operationcount=0 -p readproportion=0.5 -p updateproportion=0.5
  label=runA; ycsb "$1" -t -p operationcount=100000000 -p maxexecutiontime="$SECONDS_PER_RUN" \
    -p readproportion=0.5 -p updateproportion=0.5 -p requestdistribution=zipfian
  label=runC; ycsb "$1" -t -p operationcount=100000000 -p maxexecutiontime="$SECONDS_PER_RUN" \
    -p readproportion=1.0 -p updateproportion=0 -p requestdistribution=zipfian
  label=runE; ycsb "$1" -t -p operationcount=100000000 -p maxexecutiontime="$SECONDS_PER_RUN" \
    -p readproportion=0 -p updateproportion=0 -p scanproportion=0.95 -p insertproportion=0.05 \
    -p requestdistribution=zipfian -p maxscanlength=100 -p scanlengthdistribution=uniform
}

echo "records=$RECORDS run_seconds=$SECONDS_PER_RUN memory_limit=${LIMIT:-none (page-cache mode)} heap=$HEAP $(date -u)" >> "$OUT/summary.txt"
start_server parallax io.parallaxkv.mongo.ServerCommand --dbpath "$OUT/data-parallax" --port $PORT
run_all parallax
stop_server parallax
start_server h2 io.parallaxkv.mongo.H2PeerServer "$OUT/data-h2/h2.mv" $PORT
run_all h2
stop_server h2
