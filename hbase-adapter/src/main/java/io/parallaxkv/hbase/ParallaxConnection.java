package io.parallaxkv.hbase;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionConfiguration;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableBuilder;
import org.apache.hadoop.hbase.exceptions.ConnectionClosedException;
import org.apache.hadoop.hbase.security.User;

/**
 * An HBase {@link Connection} whose tables live in a Parallax volume of this process. Select it
 * with {@code hbase.client.connection.impl=io.parallaxkv.hbase.ParallaxConnection} and name the
 * volume file with {@value #PATH}; {@code ConnectionFactory.createConnection(conf)} then returns
 * one without contacting ZooKeeper or any server. Thread-safe; connections to the same path
 * share the open volume.
 */
public final class ParallaxConnection implements Connection {
  /** The property naming the engine volume file (created when missing). */
  public static final String PATH = "parallax.hbase.path";

  /** The client timeouts HBase callers may read back (nothing here times out on a network). */
  record Timeouts(long rpc, long read, long write, long operation) {}

  private final Configuration conf;
  private final HBaseVolume volume;
  private final long maxKeyValueSize;
  private final Timeouts timeouts;
  private volatile boolean closed;
  private volatile boolean aborted;

  /** The constructor HBase 2.2–2.5's ConnectionFactory calls. */
  public ParallaxConnection(Configuration conf, ExecutorService pool, User user)
      throws IOException {
    this(conf, pool, user, Map.of());
  }

  /** The constructor HBase 2.6's ConnectionFactory calls (with connection attributes). */
  public ParallaxConnection(Configuration conf, ExecutorService pool, User user,
      Map<String, byte[]> attributes) throws IOException {
    String path = conf.get(PATH);
    if (path == null || path.isBlank()) {
      throw new IOException(PATH + " is not set: it names the Parallax volume file that holds"
          + " the tables");
    }
    this.conf = conf;
    this.volume = HBaseVolume.acquire(Path.of(path),
        conf.getLong(Sweeper.MIN_CELLS, Sweeper.DEFAULT_MIN_CELLS),
        conf.getLong(Sweeper.ROW_CELLS, Sweeper.DEFAULT_ROW_CELLS));
    this.maxKeyValueSize = conf.getLong(ConnectionConfiguration.MAX_KEYVALUE_SIZE_KEY,
        ConnectionConfiguration.MAX_KEYVALUE_SIZE_DEFAULT);
    long rpc = conf.getLong(HConstants.HBASE_RPC_TIMEOUT_KEY, HConstants.DEFAULT_HBASE_RPC_TIMEOUT);
    this.timeouts = new Timeouts(rpc, conf.getLong(HConstants.HBASE_RPC_READ_TIMEOUT_KEY, rpc),
        conf.getLong(HConstants.HBASE_RPC_WRITE_TIMEOUT_KEY, rpc),
        conf.getLong(HConstants.HBASE_CLIENT_OPERATION_TIMEOUT,
            HConstants.DEFAULT_HBASE_CLIENT_OPERATION_TIMEOUT));
  }

  HBaseVolume volume() {
    return volume;
  }

  long maxKeyValueSize() {
    return maxKeyValueSize;
  }

  Timeouts timeouts() {
    return timeouts;
  }

  /** Fails as HBase's client does once its connection is closed. */
  void checkOpen() throws ConnectionClosedException {
    if (closed) throw new ConnectionClosedException("Connection was closed");
  }

  @Override
  public Configuration getConfiguration() {
    return conf;
  }

  @Override
  public Table getTable(TableName name) throws IOException {
    checkOpen();
    return new ParallaxTable(this, name);
  }

  @Override
  public TableBuilder getTableBuilder(TableName name, ExecutorService pool) {
    return new TableBuilder() {
      @Override
      public TableBuilder setOperationTimeout(int timeout) {
        return this;
      }

      @Override
      public TableBuilder setRpcTimeout(int timeout) {
        return this;
      }

      @Override
      public TableBuilder setReadRpcTimeout(int timeout) {
        return this;
      }

      @Override
      public TableBuilder setWriteRpcTimeout(int timeout) {
        return this;
      }

      @Override
      public TableBuilder setRequestAttribute(String key, byte[] value) {
        return this;
      }

      @Override
      public Table build() {
        return new ParallaxTable(ParallaxConnection.this, name);
      }
    };
  }

  @Override
  public BufferedMutator getBufferedMutator(TableName name) throws IOException {
    return getBufferedMutator(new BufferedMutatorParams(name));
  }

  @Override
  public BufferedMutator getBufferedMutator(BufferedMutatorParams params) throws IOException {
    checkOpen();
    return new ParallaxBufferedMutator(this, params);
  }

  @Override
  public RegionLocator getRegionLocator(TableName name) throws IOException {
    checkOpen();
    volume.tables().get(name);
    return new ParallaxRegionLocator(name);
  }

  @Override
  public void clearRegionLocationCache() {
    // Nothing cached.
  }

  @Override
  public Admin getAdmin() throws IOException {
    checkOpen();
    return ParallaxAdmin.create(this);
  }

  @Override
  public String getClusterId() {
    return "parallax";
  }

  @Override
  public synchronized void close() {
    if (closed) return;
    closed = true;
    volume.release();
  }

  @Override
  public boolean isClosed() {
    return closed;
  }

  @Override
  public void abort(String why, Throwable e) {
    aborted = true;
    close();
  }

  @Override
  public boolean isAborted() {
    return aborted;
  }
}
