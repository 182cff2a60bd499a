package io.parallaxkv.hbase;

import org.apache.hadoop.hbase.HBaseConfiguration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;

/**
 * Creates YCSB's {@code usertable} (family {@code family}) wherever the hbase-site.xml on the
 * class path points — the adapter or a MiniHBaseServer — for the benchmarks in docs/hbase.md.
 */
public final class CreateYcsbTable {
  private CreateYcsbTable() {}

  public static void main(String[] args) throws Exception {
    try (Connection c = ConnectionFactory.createConnection(HBaseConfiguration.create());
         Admin admin = c.getAdmin()) {
      TableName name = TableName.valueOf("usertable");
      if (!admin.tableExists(name)) {
        admin.createTable(TableDescriptorBuilder.newBuilder(name)
            .setColumnFamily(ColumnFamilyDescriptorBuilder.of("family")).build());
      }
    }
  }
}
