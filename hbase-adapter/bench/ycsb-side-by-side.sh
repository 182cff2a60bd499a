#!/bin/bash
# YCSB side by side: the adapter, a MiniHBaseCluster, the raw engine (benchmarks' ParallaxClient).
set -euo pipefail
N=${N:-100000}
R=$(cd "$(dirname "$0")/../.." && pwd)
W=$R/hbase-adapter
CP="$W/target/classes:$W/target/test-classes:$(cat $W/target/child-classpath.txt)"
OPENS=$(sed -n 's:.*<hbase.jdk17.opens>\(.*\)</hbase.jdk17.opens>.*:\1:p' $W/pom.xml)
B=${B:-$R/../shared/ycsb-bindings/hbase2-binding.jar}
D=${D:-/tmp/hbbench}; rm -rf $D; mkdir -p $D/adapter-conf $D/raw
J="nice java -Xmx1g $OPENS -Dparallax.backend=jni -Dparallax.cache.dir=$W/target/native-cache"
cat > $D/adapter-conf/hbase-site.xml <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.client.connection.impl</name><value>io.parallaxkv.hbase.ParallaxConnection</value></property>
  <property><name>parallax.hbase.path</name><value>$D/adapter.vol</value></property>
</configuration>
XML
COMMON="-threads 2 -s -p workload=site.ycsb.workloads.CoreWorkload -p recordcount=$N -p operationcount=$N -p requestdistribution=zipfian -p readproportion=0 -p updateproportion=0 -p scanproportion=0 -p insertproportion=0"
phases() { # $1 label, rest: java + db args
  label=$1; shift
  for ph in "load -load -p insertproportion=1" "runA -t -p readproportion=0.5 -p updateproportion=0.5" "runC -t -p readproportion=1"; do
    set -- "$@"; name=${ph%% *}; args=${ph#* }
    out=$("$@" $COMMON $args 2>&1 | tee $D/$label-$name.log | grep -E "^\[(OVERALL|READ|UPDATE|INSERT)\], (Throughput|Return=|AverageLatency)" | tr '\n' ' ')
    echo "$label $name: $out"
  done
}
# 1. the adapter
$J -cp "$D/adapter-conf:$CP" io.parallaxkv.hbase.CreateYcsbTable
phases adapter $J -cp "$D/adapter-conf:$B:$CP" site.ycsb.Client -db site.ycsb.db.hbase2.HBaseClient2 -p columnfamily=family
# 2. the raw engine through the Java API (the benchmarks module's YCSB binding)
phases raw $J -cp "$R/benchmarks/target/benchmarks.jar" site.ycsb.Client -db io.parallaxkv.ycsb.ParallaxClient -p parallax.dir=$D/raw
# 3. a MiniHBaseCluster in its own JVM
mkfifo $D/mini-in
$J -cp "$CP" io.parallaxkv.hbase.MiniHBaseServer $D/mini-conf < $D/mini-in > $D/mini.log 2>&1 &
MINI=$!
exec 3> $D/mini-in
for i in $(seq 1 120); do grep -q '^ready' $D/mini.log && break; sleep 1; done
$J -cp "$D/mini-conf:$CP" io.parallaxkv.hbase.CreateYcsbTable
phases minihbase $J -cp "$D/mini-conf:$B:$CP" site.ycsb.Client -db site.ycsb.db.hbase2.HBaseClient2 -p columnfamily=family
exec 3>&-
wait $MINI
