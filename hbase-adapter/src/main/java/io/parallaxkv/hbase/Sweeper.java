package io.parallaxkv.hbase;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reclaims, in the background, what HBase drops when it flushes a memstore: masked puts,
 * versions beyond a family's maximum and cells past their TTL ({@link Compaction.Kind#FLUSH}).
 * HBase flushes when a memstore reaches its size; this adapter sweeps at two grains, both
 * triggered by the cells written:
 *
 * <ul>
 *   <li>a <b>row</b> once the cells written to it since its last sweep reach half of the cells
 *       that sweep kept, and at least {@code rowCells}: a row updated over and over (a hot key)
 *       is swept after every few dozen of its writes, so its reads never walk more than that many
 *       dead versions; rows are tracked in a bounded map (forgotten all at once when it is
 *       full), so a row written rarely is left to the table sweep;
 *   <li>a <b>table</b> once the cells written to it since its last sweep reach half of the cells
 *       that sweep kept, and at least {@code minCells}.
 * </ul>
 *
 * A sweep reads each stored cell of what it sweeps once, so its work per cell written stays
 * bounded (about three cells read per cell written) however large the row or table grows, and
 * the garbage stays below about half the live cells plus the minimum. An insert-only load pays
 * that reading without anything to drop.
 *
 * <p>Two daemon threads per volume run the sweeps, one for rows and one for tables.
 */
final class Sweeper implements AutoCloseable {
  /** Configuration key: the fewest cells written before a table is swept; 0 or less: never. */
  static final String MIN_CELLS = "parallax.hbase.sweep.min-cells";
  static final long DEFAULT_MIN_CELLS = 100_000;
  /** Configuration key: the fewest cells written to a row before it is swept; 0 or less: never. */
  static final String ROW_CELLS = "parallax.hbase.sweep.row-cells";
  static final long DEFAULT_ROW_CELLS = 64;
  private static final int MAX_TRACKED_ROWS = 100_000;

  /** A row of a table, for the per-row counts. */
  private record RowId(TableStore table, ByteBuffer row) {}

  private final long minCells;
  private final long rowCells;
  /** Per tracked row: cells still to write before its next sweep. */
  private final Map<RowId, AtomicLong> rowsLeft = new ConcurrentHashMap<>();
  private final RowLocks locks;
  /** Row sweeps have their own thread, so that they never wait behind a long table sweep. */
  private final ExecutorService rowThread = daemon("parallax-hbase-sweep-rows");
  private final ExecutorService tableThread = daemon("parallax-hbase-sweep-tables");
  private final AtomicLong sweeps = new AtomicLong();
  private final AtomicLong rowSweeps = new AtomicLong();
  private volatile boolean closing;

  private static ExecutorService daemon(String name) {
    return Executors.newSingleThreadExecutor(r -> {
      Thread t = new Thread(r, name);
      t.setDaemon(true);
      return t;
    });
  }

  Sweeper(long minCells, long rowCells, RowLocks locks) {
    this.minCells = minCells;
    this.rowCells = rowCells;
    this.locks = locks;
  }

  /** The threshold a table starts with, before its first sweep. */
  long initialThreshold() {
    return minCells > 0 ? minCells : Long.MAX_VALUE;
  }

  /**
   * Called after {@code cells} were written to {@code row} of {@code table}: queues a sweep of
   * the row or of the table when one is due.
   */
  void wrote(TableStore table, byte[] row, int cells) {
    if (closing) return;
    if (rowCells > 0) {
      if (rowsLeft.size() >= MAX_TRACKED_ROWS) rowsLeft.clear();
      RowId id = new RowId(table, ByteBuffer.wrap(row.clone()));
      long before = rowsLeft.computeIfAbsent(id, k -> new AtomicLong(rowCells)).getAndAdd(-cells);
      // Exactly one writer sees the count cross zero and queues the row's sweep.
      if (before > 0 && before - cells <= 0) queue(rowThread, () -> sweepRow(id));
    }
    if (minCells > 0 && table.addWritten(cells) && !queue(tableThread, () -> sweep(table))) {
      table.sweepDone(Long.MAX_VALUE);
    }
  }

  private static boolean queue(ExecutorService thread, Runnable sweep) {
    try {
      thread.execute(sweep);
      return true;
    } catch (RejectedExecutionException closed) {
      return false;
    }
  }

  private void sweepRow(RowId id) {
    long next = rowCells;
    try {
      Compaction.Result r = Compaction.runRow(id.table(), locks, id.row().array(),
          Compaction.Kind.FLUSH);
      next = Math.max(rowCells, r.kept() / 2);
      rowSweeps.incrementAndGet();
    } catch (IOException | RuntimeException e) {
      // The table was disabled, deleted or closed meanwhile: the row starts counting afresh.
    } finally {
      rowsLeft.put(id, new AtomicLong(next));
    }
  }

  /** Sweeps {@code table} now, on the caller's thread (Admin.flush). */
  Compaction.Result sweepNow(TableStore table) throws IOException {
    Compaction.Result r = Compaction.run(table, locks, Compaction.Kind.FLUSH, () -> closing);
    sweeps.incrementAndGet();
    return r;
  }

  private void sweep(TableStore table) {
    long next = Long.MAX_VALUE;
    try {
      Compaction.Result r = sweepNow(table);
      next = Math.max(minCells, r.kept() / 2);
    } catch (IOException | RuntimeException e) {
      // The table was disabled, deleted or closed meanwhile: nothing to reclaim now; the next
      // writes (if the table comes back) queue a new sweep.
      next = minCells;
    } finally {
      table.sweepDone(next);
    }
  }

  /** Table sweeps completed since the volume was opened (background and Admin.flush). */
  long sweeps() {
    return sweeps.get();
  }

  /** Row sweeps completed since the volume was opened. */
  long rowSweeps() {
    return rowSweeps.get();
  }

  /** Stops the sweeps in progress at their next row and waits for the threads to end. */
  @Override
  public void close() {
    closing = true;
    rowThread.shutdown();
    tableThread.shutdown();
    try {
      rowThread.awaitTermination(1, TimeUnit.MINUTES);
      tableThread.awaitTermination(1, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
