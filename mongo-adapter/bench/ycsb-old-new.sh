#!/bin/sh
# The adapter at an older commit against the working tree's, side by side on the same data:
# Load A once (RECORDS documents, the new server), then YCSB Run A (or Run E with RUN=E: 95 %
# scans of up to 100 documents, 5 % inserts) for RUN_SECONDS on the old server, then on the new
# one, twice (old, new, old, new), each on the same --dbpath, 2 client threads, zipfian. With
# MEMORY_LIMIT (e.g. 512m) each server JVM runs in a cgroup v1 memory group of that limit (equal
# memory, page cache charged too); without it, page-cache mode. HEAP (default 1g): -Xmx.
#   mongo-adapter/bench/ycsb-old-new.sh OLD_COMMIT [RECORDS] [RUN_SECONDS] [MEMORY_LIMIT]
# Needs `mvn -pl mongo-adapter -am test-compile` first (the new server's classes and the YCSB
# class path) and the binding in ../shared/ycsb-bindings. The old commit's mongo-adapter sources
# are compiled with javac against the current dependencies. Results: target/ycsb-old-new/.
set -eu
cd "$(dirname "$0")/.."
OLD=$1
RECORDS=${2:-1000000}
SECONDS_PER_RUN=${3:-60}
LIMIT=${4:-}
HEAP=${HEAP:-1g}
RUN=${RUN:-A}
OUT=target/ycsb-old-new
rm -rf "$OUT"; mkdir -p "$OUT/old-src" "$OUT/old-classes"
mvn -B -ntp -o -q dependency:build-classpath -Dmdep.outputFile="$OUT/cp.txt" >/dev/null
ENGINE_JAR=$(ls ../engine-java/target/parallax-engine-*-SNAPSHOT.jar | grep -v -e sources -e javadoc)
DEPS=$(sed "s#[^:]*parallax-engine[^:]*#$ENGINE_JAR#" "$OUT/cp.txt")
git archive "$OLD" src/main | tar -x -C "$OUT/old-src"
javac -nowarn -d "$OUT/old-classes" -cp "$DEPS" $(find "$OUT/old-src" -name '*.java')
NEW_CP="target/classes:$DEPS"
OLD_CP="$OUT/old-classes:$DEPS"
YCSB_CP="../../shared/ycsb-bindings/mongodb-binding.jar:$(ls target/ycsb-lib/*.jar | tr '\n' ':')"
PORT=27093

start_server() { # NAME CLASSPATH
  name=$1; classpath=$2
  set --
  if [ -n "$LIMIT" ]; then
    group=/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)/ycsb-old-new-$$-$name
    mkdir -p "$group"; echo "$LIMIT" | tr a-z A-Z | numfmt --from=iec > "$group/memory.limit_in_bytes"
    set -- sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group"
  fi
  "$@" nice java -Xmx"$HEAP" -cp "$classpath" io.parallaxkv.mongo.ServerCommand --dbpath "$OUT/data" \
    --port $PORT > "$OUT/server-$name.log" 2>&1 &
  SERVER_PID=$!
  for _ in $(seq 1 100); do grep -q listening "$OUT/server-$name.log" && return; sleep 0.2; done
  echo "server $name did not start:"; cat "$OUT/server-$name.log"; exit 1
}

stop_server() {
  kill "$SERVER_PID"; wait "$SERVER_PID" || true
  # force_empty drops the group's page cache: removed with it, the pages would stay cached for
  # the next server, which would then read what this one read without its device reads.
  if [ -n "$LIMIT" ]; then echo 0 > "$group/memory.force_empty"; rmdir "$group"; fi
}

ycsb() { # LABEL PHASE WORKLOAD-PROPERTIES...
  label=$1; phase=$2; shift 2
  nice java -cp "$YCSB_CP" site.ycsb.Client "$phase" -db site.ycsb.db.MongoDbClient -s \
    -p mongodb.url="mongodb://127.0.0.1:$PORT/ycsb?w=1" -p workload=site.ycsb.workloads.CoreWorkload \
    -p recordcount="$RECORDS" -threads 2 -p requestdistribution=zipfian "$@" \
    > "$OUT/$label.txt" 2> "$OUT/$label.err"
  echo "$label: $(grep -E '^\[OVERALL\], Throughput' "$OUT/$label.txt"), load average $(cut -d' ' -f1-3 /proc/loadavg)" \
    | tee -a "$OUT/summary.txt"
}

echo "old=$OLD records=$RECORDS run=$RUN run_seconds=$SECONDS_PER_RUN memory_limit=${LIMIT:-none (page-cache mode)} heap=$HEAP $(date -u)" >> "$OUT/summary.txt"
if [ "$RUN" = E ]; then
  MIX="-p readproportion=0 -p updateproportion=0 -p scanproportion=0.95 -p insertproportion=0.05 -p maxscanlength=100 -p scanlengthdistribution=uniform"
else
  MIX="-p readproportion=0.5 -p updateproportion=0.5"
fi
start_server load "$NEW_CP"
ycsb loadA -load -p operationcount=0
stop_server
for round in 1 2; do
  for side in old new; do
    if [ $side = old ]; then cp="$OLD_CP"; else cp="$NEW_CP"; fi
    start_server "$side-$round" "$cp"
    # shellcheck disable=SC2086 # MIX is a list of arguments
    ycsb "run$RUN-$side-$round" -t -p operationcount=100000000 -p maxexecutiontime="$SECONDS_PER_RUN" $MIX
    stop_server
  done
done
