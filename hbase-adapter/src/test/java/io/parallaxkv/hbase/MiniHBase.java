package io.parallaxkv.hbase;

import java.io.IOException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HBaseTestingUtility;
import org.apache.hadoop.hbase.StartMiniClusterOption;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;

/**
 * A real HBase in the test JVM: mini ZooKeeper, one master, one region server, on the local file
 * system (no HDFS), listening on loopback, web UIs off.
 */
final class MiniHBase implements AutoCloseable {
  private final HBaseTestingUtility util;
  private final Connection connection;

  MiniHBase() throws Exception {
    util = new HBaseTestingUtility();
    Configuration c = util.getConfiguration();
    c.set("hbase.master.ipc.address", "127.0.0.1");
    c.set("hbase.regionserver.ipc.address", "127.0.0.1");
    c.set("hbase.master.hostname", "localhost");
    c.set("hbase.regionserver.hostname", "localhost");
    c.setInt("hbase.master.info.port", -1);
    c.setInt("hbase.regionserver.info.port", -1);
    // The local file system has no hflush: use the classic WAL and skip the capability check.
    c.set("hbase.wal.provider", "filesystem");
    c.setBoolean("hbase.unsafe.stream.capability.enforce", false);
    c.setInt("hbase.regionserver.handler.count", 5);
    util.startMiniZKCluster();
    util.startMiniHBaseCluster(StartMiniClusterOption.builder().numMasters(1)
        .numRegionServers(1).build());
    connection = ConnectionFactory.createConnection(c);
  }

  Connection connection() {
    return connection;
  }

  /** Flushes the table's memstore and major-compacts its regions, waiting for both. */
  void majorCompact(TableName name) throws IOException {
    util.flush(name);
    util.compact(name, true);
  }

  @Override
  public void close() throws IOException {
    connection.close();
    util.shutdownMiniHBaseCluster();
    util.shutdownMiniZKCluster();
    util.cleanupTestDir();
  }
}
