package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.AsyncTable;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;

/**
 * The data operations of an {@link AsyncTable}, each run now on a {@link ParallaxTable} and
 * returned as a completed (or failed) future. Exposed through {@link SupportedCalls}: AsyncTable
 * calls not here fail with an UnsupportedOperationException naming them.
 */
public final class ParallaxAsyncTable {
  private final ParallaxTable table;

  private ParallaxAsyncTable(ParallaxTable table) {
    this.table = table;
  }

  @SuppressWarnings("unchecked")
  static <C extends org.apache.hadoop.hbase.client.ScanResultConsumerBase> AsyncTable<C> create(
      ParallaxTable table) {
    return SupportedCalls.proxy(AsyncTable.class, new ParallaxAsyncTable(table));
  }

  private interface Call<T> {
    T run() throws IOException;
  }

  private static <T> CompletableFuture<T> now(Call<T> call) {
    try {
      return CompletableFuture.completedFuture(call.run());
    } catch (IOException | RuntimeException e) {
      return CompletableFuture.failedFuture(e);
    }
  }

  public TableName getName() {
    return table.getName();
  }

  public Configuration getConfiguration() {
    return table.getConfiguration();
  }

  public CompletableFuture<Result> get(Get get) {
    return now(() -> table.get(get));
  }

  public CompletableFuture<Boolean> exists(Get get) {
    return now(() -> table.exists(get));
  }

  public CompletableFuture<Void> put(Put put) {
    return now(() -> {
      table.put(put);
      return null;
    });
  }

  public CompletableFuture<Void> delete(Delete delete) {
    return now(() -> {
      table.delete(delete);
      return null;
    });
  }

  public CompletableFuture<Result> increment(Increment increment) {
    return now(() -> table.increment(increment));
  }

  public CompletableFuture<Result> append(Append append) {
    return now(() -> table.append(append));
  }

  public CompletableFuture<Result> mutateRow(RowMutations mutation) {
    return now(() -> table.mutateRow(mutation));
  }

  public CompletableFuture<CheckAndMutateResult> checkAndMutate(CheckAndMutate cam) {
    return now(() -> table.checkAndMutate(cam));
  }

  public ResultScanner getScanner(Scan scan) throws IOException {
    return table.getScanner(scan);
  }

  public CompletableFuture<List<Result>> scanAll(Scan scan) {
    return now(() -> {
      try (ResultScanner s = table.getScanner(scan)) {
        return Arrays.asList(s.next(Integer.MAX_VALUE));
      }
    });
  }
}
