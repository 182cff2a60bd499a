#!/bin/sh
# The adapter at an older commit against the working tree's, side by side on the same data:
# YCSB Load A once (RECORDS rows of 10 cells, the new adapter), then YCSB Run E (95 % scans of up
# to 100 rows, 5 % inserts; RUN=A for 50/50 reads and updates, RUN=C for reads) for RUN_SECONDS with the old
# adapter, then the new one, twice (old, new, old, new), on the same volume, 2 client threads,
# zipfian, YCSB's unmodified hbase2 binding. The adapter runs inside YCSB's JVM; with MEMORY_LIMIT
# (e.g. 512m) each run phase's JVM is in a cgroup v1 memory group of that limit (equal memory,
# page cache charged too); without it, page-cache mode. HEAP (default 256m): -Xmx.
#   hbase-adapter/bench/ycsb-old-new.sh OLD_COMMIT [RECORDS] [RUN_SECONDS] [MEMORY_LIMIT]
# Needs `mvn -pl hbase-adapter -am test-compile` first (the new adapter's classes and the class
# path) and the binding in ../shared/ycsb-bindings. The old commit's hbase-adapter sources are
# compiled with javac against the current dependencies. Results: target/ycsb-old-new/.
set -eu
cd "$(dirname "$0")/.."
OLD=$1
RECORDS=${2:-1000000}
SECONDS_PER_RUN=${3:-60}
LIMIT=${4:-}
HEAP=${HEAP:-256m}
RUN=${RUN:-E}
OUT=target/ycsb-old-new
rm -rf "$OUT"; mkdir -p "$OUT/old-src" "$OUT/old-classes" "$OUT/conf"
ENGINE_JAR=$(ls ../engine-java/target/parallax-engine-*-SNAPSHOT.jar | grep -v -e sources -e javadoc)
DEPS=$(sed "s#[^:]*parallax-engine[^:]*#$ENGINE_JAR#" target/child-classpath.txt)
git archive "$OLD" src/main | tar -x -C "$OUT/old-src"
javac -nowarn -d "$OUT/old-classes" -cp "$DEPS" $(find "$OUT/old-src" -name '*.java')
NEW_CP="target/classes:target/test-classes:$DEPS"
OLD_CP="$OUT/old-classes:target/test-classes:$DEPS"
BINDING=../../shared/ycsb-bindings/hbase2-binding.jar
OPENS=$(sed -n 's:.*<hbase.jdk17.opens>\(.*\)</hbase.jdk17.opens>.*:\1:p' pom.xml)
cat > "$OUT/conf/hbase-site.xml" <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.client.connection.impl</name><value>io.parallaxkv.hbase.ParallaxConnection</value></property>
  <property><name>parallax.hbase.path</name><value>$PWD/$OUT/adapter.vol</value></property>
</configuration>
XML

ycsb() { # LABEL CLASSPATH PHASE WORKLOAD-PROPERTIES...
  label=$1; classpath=$2; phase=$3; shift 3
  set -- nice java -Xmx"$HEAP" $OPENS -Dparallax.backend=jni -Dparallax.cache.dir=target/native-cache \
    -cp "$OUT/conf:$BINDING:$classpath" site.ycsb.Client "$phase" -db site.ycsb.db.hbase2.HBaseClient2 -s \
    -p columnfamily=family -p workload=site.ycsb.workloads.CoreWorkload -p recordcount="$RECORDS" \
    -threads 2 -p requestdistribution=zipfian "$@"
  group=
  if [ -n "$LIMIT" ] && [ "$phase" = -t ]; then
    group=/sys/fs/cgroup/memory$(awk -F: '$2 ~ /(^|,)memory(,|$)/ {print $3}' /proc/self/cgroup)/ycsb-old-new-$$-$label
    mkdir -p "$group"; echo "$LIMIT" | tr a-z A-Z | numfmt --from=iec > "$group/memory.limit_in_bytes"
    set -- sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$group" "$@"
  fi
  "$@" > "$OUT/$label.txt" 2> "$OUT/$label.err"
  if [ -n "$group" ]; then
    # force_empty drops the group's page cache: removed with it, the pages would stay cached for
    # the next run, which would then read what this one read without its device reads.
    echo 0 > "$group/memory.force_empty"; rmdir "$group"
  fi
  echo "$label: $(grep -E '^\[OVERALL\], Throughput' "$OUT/$label.txt"), load average $(cut -d' ' -f1-3 /proc/loadavg)" \
    | tee -a "$OUT/summary.txt"
}

echo "old=$OLD records=$RECORDS run=$RUN run_seconds=$SECONDS_PER_RUN memory_limit=${LIMIT:-none (page-cache mode)} heap=$HEAP $(date -u)" >> "$OUT/summary.txt"
if [ "$RUN" = E ]; then
  MIX="-p readproportion=0 -p updateproportion=0 -p scanproportion=0.95 -p insertproportion=0.05 -p maxscanlength=100 -p scanlengthdistribution=uniform"
elif [ "$RUN" = C ]; then
  MIX="-p readproportion=1 -p updateproportion=0"
else
  MIX="-p readproportion=0.5 -p updateproportion=0.5"
fi
nice java $OPENS -Dparallax.backend=jni -Dparallax.cache.dir=target/native-cache -cp "$OUT/conf:$NEW_CP" \
  io.parallaxkv.hbase.CreateYcsbTable
ycsb loadA "$NEW_CP" -load -p operationcount=0
for round in 1 2; do
  for side in old new; do
    if [ $side = old ]; then cp="$OLD_CP"; else cp="$NEW_CP"; fi
    # shellcheck disable=SC2086 # MIX is a list of arguments
    ycsb "run$RUN-$side-$round" "$cp" -t -p operationcount=100000000 -p maxexecutiontime="$SECONDS_PER_RUN" $MIX
  done
done
