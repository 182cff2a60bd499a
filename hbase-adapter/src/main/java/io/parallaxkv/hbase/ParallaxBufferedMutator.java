package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.BufferedMutatorParams;
import org.apache.hadoop.hbase.client.ConnectionConfiguration;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.exceptions.ConnectionClosedException;

/**
 * Buffers mutations until the write buffer size is reached, then writes them as a batch, as
 * HBase's BufferedMutatorImpl does; failures go to the params' listener (which by default
 * throws them).
 */
final class ParallaxBufferedMutator implements BufferedMutator {
  private final ParallaxConnection connection;
  private final TableName name;
  private final long bufferSize;
  private final ExceptionListener listener;
  private final List<Mutation> buffer = new ArrayList<>();
  private long buffered;
  private boolean closed;

  ParallaxBufferedMutator(ParallaxConnection connection, BufferedMutatorParams params) {
    this.connection = connection;
    this.name = params.getTableName();
    this.bufferSize = params.getWriteBufferSize() > 0 ? params.getWriteBufferSize()
        : connection.getConfiguration().getLong(ConnectionConfiguration.WRITE_BUFFER_SIZE_KEY,
            ConnectionConfiguration.WRITE_BUFFER_SIZE_DEFAULT);
    this.listener = params.getListener() != null ? params.getListener()
        : (e, mutator) -> {
          throw e;
        };
  }

  @Override
  public TableName getName() {
    return name;
  }

  @Override
  public Configuration getConfiguration() {
    return connection.getConfiguration();
  }

  @Override
  public synchronized void mutate(Mutation m) throws IOException {
    mutate(List.of(m));
  }

  @Override
  public synchronized void mutate(List<? extends Mutation> ms) throws IOException {
    if (closed) throw new ConnectionClosedException("BufferedMutator is closed");
    for (Mutation m : ms) {
      Mutations.validate(m, connection.maxKeyValueSize());
      buffer.add(m);
      buffered += m.heapSize();
    }
    if (buffered >= bufferSize) flush();
  }

  @Override
  public synchronized void flush() throws IOException {
    if (buffer.isEmpty()) return;
    List<Mutation> out = new ArrayList<>(buffer);
    buffer.clear();
    buffered = 0;
    try {
      new ParallaxTable(connection, name).batch(out, new Object[out.size()]);
    } catch (RetriesExhaustedWithDetailsException e) {
      listener.onException(e, this);
    }
  }

  @Override
  public long getWriteBufferSize() {
    return bufferSize;
  }

  @Override
  public synchronized void close() throws IOException {
    if (closed) return;
    flush();
    closed = true;
  }
}
