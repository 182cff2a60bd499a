package io.parallaxkv.hbase;

import java.io.IOException;
import java.nio.file.Path;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

/** Connections to the adapter, made the way an application makes them. */
final class Adapter {
  private Adapter() {}

  static Configuration conf(Path volume) {
    Configuration c = HBaseConfiguration.create();
    c.set("hbase.client.connection.impl", ParallaxConnection.class.getName());
    c.set(ParallaxConnection.PATH, volume.toString());
    // Points nowhere: a connection that tried ZooKeeper would fail.
    c.set("hbase.zookeeper.quorum", "127.0.0.1:1");
    return c;
  }

  static Connection connect(Path volume) throws IOException {
    return ConnectionFactory.createConnection(conf(volume));
  }
}
