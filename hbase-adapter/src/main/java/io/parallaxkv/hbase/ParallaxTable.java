package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.coprocessor.Batch;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.io.TimeRange;
import org.apache.hadoop.hbase.ipc.CoprocessorRpcChannel;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;

/**
 * A {@link Table} served in process: reads go through {@link ParallaxScanner}, writes through
 * {@link RowWriter}. Like HTable it is cheap, not thread-safe by contract (this one happens to
 * be), and checks a mutation client-side the way HBase's client does before sending it.
 */
final class ParallaxTable implements Table {
  private final ParallaxConnection connection;
  private final TableName name;

  ParallaxTable(ParallaxConnection connection, TableName name) {
    this.connection = connection;
    this.name = name;
  }

  private TableStore store() throws IOException {
    return connection.volume().tables().get(name);
  }

  private RowWriter writer() throws IOException {
    return new RowWriter(store(), connection.volume().locks());
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
  public TableDescriptor getDescriptor() throws IOException {
    connection.checkOpen();
    return store().descriptor();
  }

  @Override
  public RegionLocator getRegionLocator() {
    return new ParallaxRegionLocator(name);
  }

  @Override
  public Result get(Get get) throws IOException {
    connection.checkOpen();
    List<Cell> cells = ParallaxScanner.readAll(new ParallaxScanner(store(), new Scan(get),
        EnvironmentEdgeManager.currentTime()));
    if (get.isCheckExistenceOnly()) return Result.create(null, !cells.isEmpty());
    return Result.create(cells);
  }

  @Override
  public Result[] get(List<Get> gets) throws IOException {
    Result[] out = new Result[gets.size()];
    batch(gets, out);
    return out;
  }

  @Override
  public boolean exists(Get get) throws IOException {
    return !get(get).isEmpty();
  }

  @Override
  public boolean[] exists(List<Get> gets) throws IOException {
    boolean[] out = new boolean[gets.size()];
    for (int i = 0; i < out.length; i++) out[i] = exists(gets.get(i));
    return out;
  }

  @Override
  public ResultScanner getScanner(Scan scan) throws IOException {
    connection.checkOpen();
    return new ParallaxScanner(store(), scan, EnvironmentEdgeManager.currentTime());
  }

  @Override
  public ResultScanner getScanner(byte[] family) throws IOException {
    return getScanner(new Scan().addFamily(family));
  }

  @Override
  public ResultScanner getScanner(byte[] family, byte[] qualifier) throws IOException {
    return getScanner(new Scan().addColumn(family, qualifier));
  }

  @Override
  public void put(Put put) throws IOException {
    mutate(put);
  }

  @Override
  public void put(List<Put> puts) throws IOException {
    batch(puts, new Object[puts.size()]);
  }

  @Override
  public void delete(Delete delete) throws IOException {
    mutate(delete);
  }

  @Override
  public void delete(List<Delete> deletes) throws IOException {
    batch(deletes, new Object[deletes.size()]);
  }

  @Override
  public Result increment(Increment increment) throws IOException {
    return mutate(increment);
  }

  @Override
  public Result append(Append append) throws IOException {
    return mutate(append);
  }

  @Override
  public long incrementColumnValue(byte[] row, byte[] family, byte[] qualifier, long amount)
      throws IOException {
    return incrementColumnValue(row, family, qualifier, amount, Durability.USE_DEFAULT);
  }

  @Override
  public long incrementColumnValue(byte[] row, byte[] family, byte[] qualifier, long amount,
      Durability durability) throws IOException {
    Increment inc = new Increment(row).addColumn(family, qualifier, amount);
    inc.setDurability(durability);
    Cell c = increment(inc).getColumnLatestCell(family, qualifier);
    return Bytes.toLong(c.getValueArray(), c.getValueOffset(), c.getValueLength());
  }

  @Override
  public Result mutateRow(RowMutations rm) throws IOException {
    connection.checkOpen();
    for (Mutation m : rm.getMutations()) Mutations.validate(m, connection.maxKeyValueSize());
    return writer().mutateRow(rm);
  }

  @Override
  public CheckAndMutateResult checkAndMutate(CheckAndMutate cam) throws IOException {
    connection.checkOpen();
    if (cam.getAction() instanceof Mutation m) {
      Mutations.validate(m, connection.maxKeyValueSize());
    } else {
      for (Mutation m : ((RowMutations) cam.getAction()).getMutations()) {
        Mutations.validate(m, connection.maxKeyValueSize());
      }
    }
    return writer().checkAndMutate(cam);
  }

  @Override
  public List<CheckAndMutateResult> checkAndMutate(List<CheckAndMutate> cams) throws IOException {
    List<CheckAndMutateResult> out = new ArrayList<>(cams.size());
    for (CheckAndMutate c : cams) out.add(checkAndMutate(c));
    return out;
  }

  @Override
  public CheckAndMutateBuilder checkAndMutate(byte[] row, byte[] family) {
    return new CheckAndMutateBuilders.ByColumn(this, row, family);
  }

  @Override
  public CheckAndMutateWithFilterBuilder checkAndMutate(byte[] row, Filter filter) {
    return new CheckAndMutateBuilders.ByFilter(this, row, filter);
  }

  @Override
  public boolean checkAndPut(byte[] row, byte[] family, byte[] qualifier, CompareOperator op,
      byte[] value, Put put) throws IOException {
    return checkAndMutate(CheckAndMutate.newBuilder(row).ifMatches(family, qualifier, op, value)
        .build(put)).isSuccess();
  }

  @Override
  public boolean checkAndDelete(byte[] row, byte[] family, byte[] qualifier, CompareOperator op,
      byte[] value, Delete delete) throws IOException {
    return checkAndMutate(CheckAndMutate.newBuilder(row).ifMatches(family, qualifier, op, value)
        .build(delete)).isSuccess();
  }

  @Override
  public boolean checkAndMutate(byte[] row, byte[] family, byte[] qualifier, CompareOperator op,
      byte[] value, RowMutations mutation) throws IOException {
    return checkAndMutate(CheckAndMutate.newBuilder(row).ifMatches(family, qualifier, op, value)
        .build(mutation)).isSuccess();
  }

  /** One mutation, validated as HBase's client does, applied under its row lock. */
  private Result mutate(Mutation m) throws IOException {
    connection.checkOpen();
    Mutations.validate(m, connection.maxKeyValueSize());
    return writer().mutate(m);
  }

  /**
   * Each action on its own (a batch is not atomic across rows in HBase either); failures are
   * reported together afterwards as RetriesExhaustedWithDetailsException, the results array
   * holding each failed action's exception.
   */
  @Override
  public void batch(List<? extends Row> actions, Object[] results) throws IOException {
    connection.checkOpen();
    List<Throwable> errors = new ArrayList<>();
    List<Row> failed = new ArrayList<>();
    RowWriter writer = RowWriter.forBatch(store(), connection.volume().locks());
    for (int i = 0; i < actions.size(); i++) {
      Row action = actions.get(i);
      try {
        results[i] = apply(action, writer);
      } catch (IOException | RuntimeException e) {
        results[i] = e;
        errors.add(e);
        failed.add(action);
      }
    }
    writer.sync();
    if (!errors.isEmpty()) {
      List<String> where = new ArrayList<>();
      for (int i = 0; i < errors.size(); i++) where.add(ParallaxRegionLocator.LOCAL.getAddress().toString());
      throw new RetriesExhaustedWithDetailsException(errors, failed, where);
    }
  }

  private Object apply(Row action, RowWriter writer) throws IOException {
    if (action instanceof Get g) return get(g);
    if (action instanceof RowMutations rm) return mutateRow(rm);
    if (action instanceof CheckAndMutate cam) return checkAndMutate(cam);
    if (action instanceof Mutation m) {
      Mutations.validate(m, connection.maxKeyValueSize());
      Result r = writer.mutate(m);
      return r == null ? Result.EMPTY_RESULT : r;
    }
    throw new UnsupportedOperationException("Table.batch of a " + action.getClass().getName());
  }

  @Override
  public <R> void batchCallback(List<? extends Row> actions, Object[] results,
      Batch.Callback<R> callback) {
    throw new UnsupportedOperationException("Table.batchCallback");
  }

  @Override
  public CoprocessorRpcChannel coprocessorService(byte[] row) {
    throw new UnsupportedOperationException("Table.coprocessorService: no coprocessors");
  }

  @Override
  public long getRpcTimeout(TimeUnit unit) {
    return unit.convert(connection.timeouts().rpc(), TimeUnit.MILLISECONDS);
  }

  @Override
  public long getReadRpcTimeout(TimeUnit unit) {
    return unit.convert(connection.timeouts().read(), TimeUnit.MILLISECONDS);
  }

  @Override
  public long getWriteRpcTimeout(TimeUnit unit) {
    return unit.convert(connection.timeouts().write(), TimeUnit.MILLISECONDS);
  }

  @Override
  public long getOperationTimeout(TimeUnit unit) {
    return unit.convert(connection.timeouts().operation(), TimeUnit.MILLISECONDS);
  }

  @Override
  public Map<String, byte[]> getRequestAttributes() {
    return Map.of();
  }

  @Override
  public void close() {
    // A table holds nothing of its own; the connection owns the volume.
  }

  /** The old checkAndMutate builders, on top of {@link CheckAndMutate}. */
  static final class CheckAndMutateBuilders {
    private CheckAndMutateBuilders() {}

    static final class ByColumn implements CheckAndMutateBuilder {
      private final ParallaxTable table;
      private final byte[] row;
      private final byte[] family;
      private byte[] qualifier;
      private TimeRange timeRange;
      private CompareOperator op;
      private byte[] value;

      ByColumn(ParallaxTable table, byte[] row, byte[] family) {
        this.table = table;
        this.row = row;
        this.family = family;
      }

      @Override
      public CheckAndMutateBuilder qualifier(byte[] q) {
        qualifier = q;
        return this;
      }

      @Override
      public CheckAndMutateBuilder timeRange(TimeRange tr) {
        timeRange = tr;
        return this;
      }

      @Override
      public CheckAndMutateBuilder ifNotExists() {
        op = CompareOperator.EQUAL;
        value = null;
        return this;
      }

      @Override
      public CheckAndMutateBuilder ifMatches(CompareOperator compareOp, byte[] v) {
        op = compareOp;
        value = v;
        return this;
      }

      private CheckAndMutate.Builder condition() {
        if (op == null) {
          throw new IllegalStateException("condition is null. You need to specify the condition"
              + " by calling ifNotExists/ifEquals/ifMatches before executing the request");
        }
        CheckAndMutate.Builder b = CheckAndMutate.newBuilder(row)
            .ifMatches(family, qualifier, op, value);
        return timeRange == null ? b : b.timeRange(timeRange);
      }

      @Override
      public boolean thenPut(Put put) throws IOException {
        return table.checkAndMutate(condition().build(put)).isSuccess();
      }

      @Override
      public boolean thenDelete(Delete delete) throws IOException {
        return table.checkAndMutate(condition().build(delete)).isSuccess();
      }

      @Override
      public boolean thenMutate(RowMutations mutation) throws IOException {
        return table.checkAndMutate(condition().build(mutation)).isSuccess();
      }
    }

    static final class ByFilter implements CheckAndMutateWithFilterBuilder {
      private final ParallaxTable table;
      private final byte[] row;
      private final Filter filter;
      private TimeRange timeRange;

      ByFilter(ParallaxTable table, byte[] row, Filter filter) {
        this.table = table;
        this.row = row;
        this.filter = filter;
      }

      @Override
      public CheckAndMutateWithFilterBuilder timeRange(TimeRange tr) {
        timeRange = tr;
        return this;
      }

      private CheckAndMutate.Builder condition() {
        CheckAndMutate.Builder b = CheckAndMutate.newBuilder(row).ifMatches(filter);
        return timeRange == null ? b : b.timeRange(timeRange);
      }

      @Override
      public boolean thenPut(Put put) throws IOException {
        return table.checkAndMutate(condition().build(put)).isSuccess();
      }

      @Override
      public boolean thenDelete(Delete delete) throws IOException {
        return table.checkAndMutate(condition().build(delete)).isSuccess();
      }

      @Override
      public boolean thenMutate(RowMutations mutation) throws IOException {
        return table.checkAndMutate(condition().build(mutation)).isSuccess();
      }
    }
  }
}
