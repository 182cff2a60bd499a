package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HTableDescriptor;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.RegionInfo;
import org.apache.hadoop.hbase.client.TableDescriptor;

/**
 * The table administration this adapter supports. HBase's {@link Admin} interface has some 200
 * methods, most about servers, regions, replication, snapshots and quotas that have no meaning
 * in one process; {@link #create} exposes this class as an Admin through {@link SupportedCalls},
 * so each supported call is a method here with Admin's own signature and every other call
 * fails with an UnsupportedOperationException that names it.
 */
public final class ParallaxAdmin {
  private final ParallaxConnection connection;

  private ParallaxAdmin(ParallaxConnection connection) {
    this.connection = connection;
  }

  static Admin create(ParallaxConnection connection) {
    return SupportedCalls.proxy(Admin.class, new ParallaxAdmin(connection));
  }

  private Tables tables() throws IOException {
    connection.checkOpen();
    return connection.volume().tables();
  }

  public Connection getConnection() {
    return connection;
  }

  public Configuration getConfiguration() {
    return connection.getConfiguration();
  }

  public void close() {
    // The connection owns the volume.
  }

  public void abort(String why, Throwable e) {
    connection.abort(why, e);
  }

  public boolean isAborted() {
    return connection.isAborted();
  }

  public boolean tableExists(TableName name) throws IOException {
    return tables().exists(name);
  }

  public List<TableDescriptor> listTableDescriptors() throws IOException {
    return tables().descriptors();
  }

  public List<TableDescriptor> listTableDescriptors(boolean includeSysTables) throws IOException {
    return tables().descriptors();
  }

  public List<TableDescriptor> listTableDescriptors(Pattern pattern, boolean includeSysTables)
      throws IOException {
    List<TableDescriptor> out = new ArrayList<>();
    for (TableDescriptor d : tables().descriptors()) {
      if (pattern == null || pattern.matcher(d.getTableName().getNameAsString()).matches()) out.add(d);
    }
    return out;
  }

  public List<TableDescriptor> listTableDescriptors(Pattern pattern) throws IOException {
    return listTableDescriptors(pattern, false);
  }

  public List<TableDescriptor> listTableDescriptors(List<TableName> names) throws IOException {
    List<TableDescriptor> out = new ArrayList<>();
    for (TableName n : names) {
      if (tables().exists(n)) out.add(tables().get(n).descriptor());
    }
    return out;
  }

  public TableName[] listTableNames() throws IOException {
    return listTableNames(null, false);
  }

  public TableName[] listTableNames(Pattern pattern) throws IOException {
    return listTableNames(pattern, false);
  }

  public TableName[] listTableNames(Pattern pattern, boolean includeSysTables) throws IOException {
    return listTableDescriptors(pattern, includeSysTables).stream()
        .map(TableDescriptor::getTableName).toArray(TableName[]::new);
  }

  public TableDescriptor getDescriptor(TableName name) throws IOException {
    return tables().get(name).descriptor();
  }

  /** The pre-2.0 form of {@link #getDescriptor} that PerformanceEvaluation still calls. */
  @SuppressWarnings("deprecation")
  public HTableDescriptor getTableDescriptor(TableName name) throws IOException {
    return new HTableDescriptor(getDescriptor(name));
  }

  public void createTable(TableDescriptor desc) throws IOException {
    tables().create(desc);
  }

  /** Split keys are accepted and ignored: a table is one region here. */
  public void createTable(TableDescriptor desc, byte[][] splitKeys) throws IOException {
    tables().create(desc);
  }

  /** As {@link #createTable(TableDescriptor, byte[][])}: one region whatever the split. */
  public void createTable(TableDescriptor desc, byte[] startKey, byte[] endKey, int numRegions)
      throws IOException {
    tables().create(desc);
  }

  public void deleteTable(TableName name) throws IOException {
    tables().delete(name);
  }

  public void truncateTable(TableName name, boolean preserveSplits) throws IOException {
    tables().truncate(name);
  }

  public void enableTable(TableName name) throws IOException {
    tables().enable(name);
  }

  public void disableTable(TableName name) throws IOException {
    tables().disable(name);
  }

  public boolean isTableEnabled(TableName name) throws IOException {
    return tables().isEnabled(name);
  }

  public boolean isTableDisabled(TableName name) throws IOException {
    return !tables().isEnabled(name);
  }

  public boolean isTableAvailable(TableName name) throws IOException {
    return tables().exists(name);
  }

  public void modifyColumnFamily(TableName name, ColumnFamilyDescriptor family)
      throws IOException {
    tables().modifyFamily(name, family);
  }

  public void addColumnFamily(TableName name, ColumnFamilyDescriptor family) throws IOException {
    tables().addFamily(name, family);
  }

  public void deleteColumnFamily(TableName name, byte[] family) throws IOException {
    tables().deleteFamily(name, family);
  }

  public void modifyTable(TableDescriptor desc) throws IOException {
    tables().modify(desc);
  }

  public List<RegionInfo> getRegions(TableName name) throws IOException {
    tables().get(name);
    return List.of(ParallaxRegionLocator.region(name));
  }

  /**
   * Drops what an HBase major compaction drops ({@link Compaction.Kind#MAJOR}), now rather than
   * in the background: when it returns, the space is garbage for the engine's own compaction.
   */
  public void majorCompact(TableName name) throws IOException {
    connection.checkOpen();
    Compaction.run(tables().get(name), connection.volume().locks(), Compaction.Kind.MAJOR,
        () -> false);
  }

  /**
   * Drops what an HBase memstore flush drops ({@link Compaction.Kind#FLUSH}, which the
   * {@link Sweeper} otherwise does in the background) and flushes the table's in-memory level
   * to the device levels.
   */
  public void flush(TableName name) throws IOException {
    connection.checkOpen();
    TableStore table = tables().get(name);
    connection.volume().sweeper().sweepNow(table);
    table.data((region, entry) -> {
      region.flush();
      return null;
    });
  }
}
