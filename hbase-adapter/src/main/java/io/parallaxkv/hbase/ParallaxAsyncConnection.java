package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.ServerName;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.AdvancedScanResultConsumer;
import org.apache.hadoop.hbase.client.AsyncAdminBuilder;
import org.apache.hadoop.hbase.client.AsyncBufferedMutatorBuilder;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.AsyncTable;
import org.apache.hadoop.hbase.client.AsyncTableBuilder;
import org.apache.hadoop.hbase.client.AsyncTableRegionLocator;
import org.apache.hadoop.hbase.client.ConnectionRegistry;
import org.apache.hadoop.hbase.client.Hbck;
import org.apache.hadoop.hbase.client.ScanResultConsumer;
import org.apache.hadoop.hbase.security.User;

/**
 * The async connection ({@code hbase.client.async.connection.impl}, with
 * {@code hbase.client.registry.impl} set to {@link ParallaxRegistry}). Its tables run each call
 * on the caller's thread, in process, and return a completed future: there is no network to
 * wait for. Table data operations are supported (see {@link ParallaxAsyncTable}); async admin,
 * buffered mutators and region locators are not.
 */
public final class ParallaxAsyncConnection implements AsyncConnection {
  private final ParallaxConnection connection;

  /** The constructor HBase 2.6's ConnectionFactory.createAsyncConnection calls. */
  public ParallaxAsyncConnection(Configuration conf, ConnectionRegistry registry,
      String clusterId, User user, Map<String, byte[]> attributes) throws IOException {
    this.connection = new ParallaxConnection(conf, null, user, attributes);
  }

  @Override
  public Configuration getConfiguration() {
    return connection.getConfiguration();
  }

  @Override
  public AsyncTable<AdvancedScanResultConsumer> getTable(TableName name) {
    return ParallaxAsyncTable.create(new ParallaxTable(connection, name));
  }

  @Override
  public AsyncTable<ScanResultConsumer> getTable(TableName name, ExecutorService pool) {
    return ParallaxAsyncTable.create(new ParallaxTable(connection, name));
  }

  @Override
  public AsyncTableRegionLocator getRegionLocator(TableName name) {
    throw new UnsupportedOperationException("AsyncConnection.getRegionLocator");
  }

  @Override
  public void clearRegionLocationCache() {
    // Nothing cached.
  }

  @Override
  public AsyncTableBuilder<AdvancedScanResultConsumer> getTableBuilder(TableName name) {
    throw new UnsupportedOperationException("AsyncConnection.getTableBuilder: use getTable");
  }

  @Override
  public AsyncTableBuilder<ScanResultConsumer> getTableBuilder(TableName name,
      ExecutorService pool) {
    throw new UnsupportedOperationException("AsyncConnection.getTableBuilder: use getTable");
  }

  @Override
  public AsyncAdminBuilder getAdminBuilder() {
    throw new UnsupportedOperationException("AsyncConnection.getAdminBuilder: use the"
        + " synchronous Connection.getAdmin");
  }

  @Override
  public AsyncAdminBuilder getAdminBuilder(ExecutorService pool) {
    return getAdminBuilder();
  }

  @Override
  public AsyncBufferedMutatorBuilder getBufferedMutatorBuilder(TableName name) {
    throw new UnsupportedOperationException("AsyncConnection.getBufferedMutatorBuilder");
  }

  @Override
  public AsyncBufferedMutatorBuilder getBufferedMutatorBuilder(TableName name,
      ExecutorService pool) {
    return getBufferedMutatorBuilder(name);
  }

  @Override
  public boolean isClosed() {
    return connection.isClosed();
  }

  @Override
  public CompletableFuture<Hbck> getHbck() {
    return CompletableFuture.failedFuture(new UnsupportedOperationException("AsyncConnection.getHbck"));
  }

  @Override
  public Hbck getHbck(ServerName master) {
    throw new UnsupportedOperationException("AsyncConnection.getHbck");
  }

  @Override
  public void close() {
    connection.close();
  }
}
