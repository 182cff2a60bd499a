package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Reclaims, in the background, what HBase drops when it flushes a memstore: masked puts,
 * versions beyond a family's maximum and cells past their TTL ({@link Compaction.Kind#FLUSH}).
 * HBase flushes when a memstore reaches its size; this adapter sweeps a table when the cells
 * written to it since its last sweep reach half of the cells the last sweep kept (and at least
 * {@code minCells}). A sweep reads every stored cell of the table once, so its work per cell
 * written stays bounded (about three cells read per cell written) however large the table
 * grows, and the garbage a table holds stays below about half of its live cells plus
 * {@code minCells}.
 *
 * <p>One daemon thread per volume runs the sweeps, one table at a time.
 */
final class Sweeper implements AutoCloseable {
  /** Configuration key: the fewest cells written before a table is swept; 0 or less: never. */
  static final String MIN_CELLS = "parallax.hbase.sweep.min-cells";
  static final long DEFAULT_MIN_CELLS = 100_000;

  private final long minCells;
  private final RowLocks locks;
  private final ExecutorService thread = Executors.newSingleThreadExecutor(r -> {
    Thread t = new Thread(r, "parallax-hbase-sweep");
    t.setDaemon(true);
    return t;
  });
  private final AtomicLong sweeps = new AtomicLong();
  private volatile boolean closing;

  Sweeper(long minCells, RowLocks locks) {
    this.minCells = minCells;
    this.locks = locks;
  }

  /** The threshold a table starts with, before its first sweep. */
  long initialThreshold() {
    return minCells > 0 ? minCells : Long.MAX_VALUE;
  }

  /** Called after {@code cells} were written to {@code table}: queues a sweep when one is due. */
  void wrote(TableStore table, int cells) {
    if (minCells <= 0 || !table.addWritten(cells) || closing) return;
    try {
      thread.execute(() -> sweep(table));
    } catch (RejectedExecutionException closed) {
      table.sweepDone(Long.MAX_VALUE);
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

  /** Sweeps completed since the volume was opened (background and Admin.flush). */
  long sweeps() {
    return sweeps.get();
  }

  /** Stops the sweep in progress at its next row and waits for the thread to end. */
  @Override
  public void close() {
    closing = true;
    thread.shutdown();
    try {
      thread.awaitTermination(1, TimeUnit.MINUTES);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}
