package io.parallaxkv.hbase;

import io.parallaxkv.Region;
import io.parallaxkv.WriteBatch;
import io.parallaxkv.WriteOptions;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.locks.ReentrantLock;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellComparator;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.CompareOperator;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.client.Append;
import org.apache.hadoop.hbase.client.CheckAndMutate;
import org.apache.hadoop.hbase.client.CheckAndMutateResult;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Mutation;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.Row;
import org.apache.hadoop.hbase.client.RowMutations;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.filter.BinaryComparator;
import org.apache.hadoop.hbase.io.TimeRange;
import org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException;
import org.apache.hadoop.hbase.util.Bytes;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;

/**
 * The write path of one table, row by row: a mutation becomes the engine keys of its cells, with
 * the timestamps a region server would give them, written by one atomic engine batch under the
 * row's lock. What a mutation reads first (the latest version a Delete without timestamp
 * removes, an Increment's or Append's current value, a checkAndMutate's condition) is read under
 * the same lock, so each row's operations are linearizable.
 */
final class RowWriter {
  private final TableStore table;
  private final RowLocks locks;
  /** Batch mode: synced writes are written unsynced and {@link #syncOwed} remembers them. */
  private final boolean deferSync;
  private boolean syncOwed;

  RowWriter(TableStore table, RowLocks locks) {
    this(table, locks, false);
  }

  private RowWriter(TableStore table, RowLocks locks, boolean deferSync) {
    this.table = table;
    this.locks = locks;
    this.deferSync = deferSync;
  }

  /**
   * A writer for a batch of mutations whose synced writes share one sync, {@link #sync()}, called
   * before the batch returns: a region server too syncs its WAL once per batch.
   */
  static RowWriter forBatch(TableStore table, RowLocks locks) {
    return new RowWriter(table, locks, true);
  }

  /** Makes the batch's synced writes durable (batch mode). */
  void sync() throws IOException {
    if (!syncOwed) return;
    syncOwed = false;
    table.data((region, entry) -> {
      region.sync();
      return null;
    });
  }

  /** Applies one mutation; the Result of an Increment or Append, else null. */
  Result mutate(Mutation m) throws IOException {
    return locked(m.getRow(), () -> {
      Pending p = new Pending(m.getRow(), EnvironmentEdgeManager.currentTime());
      Result r = stage(m, p);
      p.write(m.getDurability());
      return r;
    });
  }

  /** Applies a row's mutations all or nothing, as HBase's mutateRow. */
  Result mutateRow(RowMutations rm) throws IOException {
    return locked(rm.getRow(), () -> mutateRowLocked(rm));
  }

  private Result mutateRowLocked(RowMutations rm) throws IOException {
    Pending p = new Pending(rm.getRow(), EnvironmentEdgeManager.currentTime());
    List<Cell> results = new ArrayList<>();
    Durability durability = Durability.USE_DEFAULT;
    for (Mutation m : rm.getMutations()) {
      Result r = stage(m, p);
      if (r != null) results.addAll(List.of(r.rawCells()));
      if (m.getDurability().ordinal() > durability.ordinal()) durability = m.getDurability();
    }
    p.write(durability);
    results.sort(CellComparator.getInstance());
    return Result.create(results);
  }

  /** HBase's checkAndMutate: the condition read and the mutation under one row lock. */
  CheckAndMutateResult checkAndMutate(CheckAndMutate cam) throws IOException {
    return locked(cam.getRow(), () -> {
      if (!matches(cam)) return new CheckAndMutateResult(false, null);
      Row action = cam.getAction();
      Result r;
      if (action instanceof RowMutations rm) {
        r = mutateRowLocked(rm);
      } else {
        Mutation m = (Mutation) action;
        Pending p = new Pending(m.getRow(), EnvironmentEdgeManager.currentTime());
        r = stage(m, p);
        p.write(m.getDurability());
      }
      return new CheckAndMutateResult(true, r);
    });
  }

  /** HRegion.checkAndMutateInternal's condition, including its null-value rules. */
  private boolean matches(CheckAndMutate cam) throws IOException {
    Get get = new Get(cam.getRow());
    if (cam.hasFilter()) {
      get.setFilter(cam.getFilter());
    } else {
      get.addColumn(cam.getFamily(), cam.getQualifier());
    }
    TimeRange tr = cam.getTimeRange();
    if (tr != null && !tr.isAllTime()) get.setTimeRange(tr.getMin(), tr.getMax());
    List<Cell> found = read(get);
    if (cam.hasFilter()) return !found.isEmpty();
    CompareOperator op = cam.getCompareOp();
    byte[] value = cam.getValue();
    boolean valueIsNull = value == null || value.length == 0;
    if (found.isEmpty() && valueIsNull) return op != CompareOperator.NOT_EQUAL;
    if (!found.isEmpty() && valueIsNull) {
      return (found.get(0).getValueLength() == 0) == (op != CompareOperator.NOT_EQUAL);
    }
    if (found.size() != 1) return false;
    Cell c = found.get(0);
    int cmp = new BinaryComparator(value).compareTo(c.getValueArray(), c.getValueOffset(),
        c.getValueLength());
    return switch (op) {
      case LESS -> cmp < 0;
      case LESS_OR_EQUAL -> cmp <= 0;
      case EQUAL -> cmp == 0;
      case NOT_EQUAL -> cmp != 0;
      case GREATER_OR_EQUAL -> cmp >= 0;
      case GREATER -> cmp > 0;
      default -> throw new DoNotRetryIOException("Unknown Compare op " + op.name());
    };
  }

  private interface Locked<T> {
    T run() throws IOException;
  }

  /**
   * Runs {@code body} holding the table (read side) and then the row's lock, in that order, as
   * Compaction does: the table's lock first, so that an admin operation waiting for the
   * table cannot stand between a row lock holder and the table.
   */
  private <T> T locked(byte[] row, Locked<T> body) throws IOException {
    return table.data((region, entry) -> {
      ReentrantLock lock = locks.of(entry.id(), row);
      lock.lock();
      try {
        return body.run();
      } finally {
        lock.unlock();
      }
    });
  }

  /** Adds the cells of {@code m} to {@code p}; the Result an Increment or Append returns. */
  private Result stage(Mutation m, Pending p) throws IOException {
    TableDescriptor desc = table.descriptor();
    for (byte[] family : m.getFamilyCellMap().keySet()) {
      if (!desc.hasColumnFamily(family)) {
        throw new NoSuchColumnFamilyException("Column family " + Bytes.toString(family)
            + " does not exist in region of table " + desc.getTableName());
      }
    }
    if (m instanceof Put) {
      for (List<Cell> cells : m.getFamilyCellMap().values()) {
        for (Cell c : cells) p.put(c, c.getTimestamp());
      }
      return null;
    }
    if (m instanceof Delete d) {
      stageDelete(d, desc, p);
      return null;
    }
    if (m instanceof Increment inc) return stageDeltas(inc, inc.getTimeRange(), inc.isReturnResults(), p);
    if (m instanceof Append app) return stageDeltas(app, app.getTimeRange(), app.isReturnResults(), p);
    throw new UnsupportedOperationException("mutation type " + m.getClass().getName());
  }

  /** HRegion.prepareDelete and prepareDeleteTimestamps. */
  private void stageDelete(Delete d, TableDescriptor desc, Pending p) throws IOException {
    if (d.getFamilyCellMap().isEmpty()) {
      long ts = d.getTimestamp() == HConstants.LATEST_TIMESTAMP ? p.now : d.getTimestamp();
      for (byte[] family : desc.getColumnFamilyNames()) {
        p.put(new KeyValue(d.getRow(), family, null, ts, KeyValue.Type.DeleteFamily), ts);
      }
      return;
    }
    for (Map.Entry<byte[], List<Cell>> e : d.getFamilyCellMap().entrySet()) {
      Map<byte[], Integer> counts = new TreeMap<>(Bytes.BYTES_COMPARATOR);
      for (Cell c : e.getValue()) {
        boolean latestVersion = c.getTimestamp() == HConstants.LATEST_TIMESTAMP
            && c.getTypeByte() == KeyValue.Type.Delete.getCode();
        if (!latestVersion) {
          p.put(c, c.getTimestamp());
          continue;
        }
        byte[] q = CellUtil.cloneQualifier(c);
        int count = counts.merge(q, 1, Integer::sum);
        List<Cell> versions = read(new Get(d.getRow()).readVersions(count).addColumn(e.getKey(), q));
        // HBase: with fewer versions than asked, the marker gets the current time.
        p.put(c, versions.size() < count ? HConstants.LATEST_TIMESTAMP
            : versions.get(count - 1).getTimestamp());
      }
    }
  }

  /**
   * Increment and Append (HRegion.reckonDeltas): the current value is the latest version within
   * the mutation's time range; the new cell's timestamp is the later of now and one past the
   * current value's.
   */
  private Result stageDeltas(Mutation m, TimeRange tr, boolean returnResults, Pending p)
      throws IOException {
    List<Cell> results = new ArrayList<>();
    for (Map.Entry<byte[], List<Cell>> e : m.getFamilyCellMap().entrySet()) {
      byte[] family = e.getKey();
      List<Cell> deltas = new ArrayList<>(e.getValue());
      deltas.sort(CellComparator.getInstance());
      Get get = new Get(m.getRow());
      for (Cell c : deltas) get.addColumn(family, CellUtil.cloneQualifier(c));
      if (tr != null && !tr.isAllTime()) get.setTimeRange(tr.getMin(), tr.getMax());
      List<Cell> current = read(get);
      for (Cell delta : deltas) {
        Cell cur = null;
        for (Cell c : current) {
          if (CellUtil.matchingQualifier(c, delta)) cur = c;
        }
        byte[] value = m instanceof Increment ? increment(cur, delta) : append(cur, delta);
        long ts = cur == null
            ? (delta.getTimestamp() == HConstants.LATEST_TIMESTAMP ? p.now : delta.getTimestamp())
            : Math.max(cur.getTimestamp() + 1, p.now);
        KeyValue cell = new KeyValue(m.getRow(), family, CellUtil.cloneQualifier(delta), ts,
            KeyValue.Type.Put, value);
        p.put(cell, ts);
        results.add(cell);
      }
    }
    return returnResults ? Result.create(results) : Result.create(new ArrayList<>());
  }

  private static byte[] increment(Cell current, Cell delta) throws DoNotRetryIOException {
    long amount = longValue(delta);
    return Bytes.toBytes(current == null ? amount : longValue(current) + amount);
  }

  private static long longValue(Cell c) throws DoNotRetryIOException {
    if (c.getValueLength() != Bytes.SIZEOF_LONG) {
      throw new DoNotRetryIOException("Field is not a long, it's " + c.getValueLength()
          + " bytes wide");
    }
    return Bytes.toLong(c.getValueArray(), c.getValueOffset(), c.getValueLength());
  }

  private static byte[] append(Cell current, Cell delta) {
    byte[] d = CellUtil.cloneValue(delta);
    return current == null ? d : Bytes.add(CellUtil.cloneValue(current), d);
  }

  /** A Get on this table, as the row lock holder sees it. */
  private List<Cell> read(Get get) throws IOException {
    return ParallaxScanner.readAll(new ParallaxScanner(table, new Scan(get),
        EnvironmentEdgeManager.currentTime()));
  }

  /** The cells a row's mutations will write, with server-assigned timestamps resolved. */
  private final class Pending {
    private final byte[] row;
    final long now;
    private final List<byte[]> keys = new ArrayList<>();
    private final List<byte[]> values = new ArrayList<>();

    Pending(byte[] row, long now) {
      this.row = row;
      this.now = now;
    }

    /** Stages {@code c} at timestamp {@code ts} (LATEST_TIMESTAMP: now). */
    void put(Cell c, long ts) {
      long t = ts == HConstants.LATEST_TIMESTAMP ? now : ts;
      keys.add(CellKey.encode(CellUtil.cloneRow(c), CellUtil.cloneFamily(c),
          CellUtil.cloneQualifier(c), t, c.getTypeByte()));
      values.add(CellUtil.cloneValue(c));
    }

    void write(Durability durability) throws IOException {
      if (keys.isEmpty()) return;
      table.data((Region region, TableCatalog.Entry entry) -> {
        WriteOptions options = Durabilities.of(durability, entry.descriptor().getDurability());
        if (deferSync && options.isSync()) {
          syncOwed = true;
          options = WriteOptions.DEFAULT;
        }
        if (keys.size() == 1) {
          region.put(keys.get(0), values.get(0), options);
          return null;
        }
        try (WriteBatch batch = new WriteBatch()) {
          for (int i = 0; i < keys.size(); i++) batch.put(keys.get(i), values.get(i));
          region.write(batch, options);
        }
        return null;
      });
      table.wrote(row, keys.size());
    }
  }
}
