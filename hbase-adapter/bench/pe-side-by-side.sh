#!/bin/bash
# PerformanceEvaluation --nomapred side by side: the adapter and a MiniHBaseCluster.
set -euo pipefail
N=${N:-100000}
W=$(cd "$(dirname "$0")/.." && pwd)
CP="$W/target/classes:$W/target/test-classes:$(cat $W/target/child-classpath.txt)"
OPENS=$(sed -n 's:.*<hbase.jdk17.opens>\(.*\)</hbase.jdk17.opens>.*:\1:p' $W/pom.xml)
D=${D:-/tmp/hbpe}; rm -rf $D; mkdir -p $D/adapter-conf $D/log
J="nice java -Xmx1g $OPENS -Dparallax.backend=jni -Dparallax.cache.dir=$W/target/native-cache"
cat > $D/log/log4j.properties <<P
log4j.rootLogger=WARN,console
log4j.logger.org.apache.hadoop.hbase.PerformanceEvaluation=INFO
log4j.appender.console=org.apache.log4j.ConsoleAppender
log4j.appender.console.layout=org.apache.log4j.PatternLayout
log4j.appender.console.layout.ConversionPattern=%m%n
P
cat > $D/adapter-conf/hbase-site.xml <<XML
<?xml version="1.0"?>
<configuration>
  <property><name>hbase.client.connection.impl</name><value>io.parallaxkv.hbase.ParallaxConnection</value></property>
  <property><name>hbase.client.async.connection.impl</name><value>io.parallaxkv.hbase.ParallaxAsyncConnection</value></property>
  <property><name>hbase.client.registry.impl</name><value>io.parallaxkv.hbase.ParallaxRegistry</value></property>
  <property><name>parallax.hbase.path</name><value>$D/adapter.vol</value></property>
</configuration>
XML
pe() { label=$1; conf=$2
  for cmd in sequentialWrite randomRead scan; do
    out=$($J -cp "$D/log:$conf:$CP" org.apache.hadoop.hbase.PerformanceEvaluation --nomapred --rows=$N --oneCon=true $cmd 1 2>&1 | tee $D/$label-$cmd.log | grep -E "Finished .* rows|Min: |Avg: " | tr '\n' ' ')
    echo "$label $cmd: $out"
  done
}
pe adapter $D/adapter-conf
mkfifo $D/mini-in
$J -cp "$CP" io.parallaxkv.hbase.MiniHBaseServer $D/mini-conf < $D/mini-in > $D/mini.log 2>&1 &
MINI=$!
exec 3> $D/mini-in
for i in $(seq 1 120); do grep -q '^ready' $D/mini.log && break; sleep 1; done
pe minihbase $D/mini-conf
exec 3>&-
wait $MINI
