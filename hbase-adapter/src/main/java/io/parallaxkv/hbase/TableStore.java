package io.parallaxkv.hbase;

import io.parallaxkv.ParallaxException;
import io.parallaxkv.Region;
import java.io.IOException;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotEnabledException;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.TableDescriptor;

/**
 * One table: its catalog entry and the engine region holding all its column families (one
 * region, so that a row's cells across families are written by one atomic engine batch; the
 * engine's batches are atomic within a region only). Data operations run under the read side
 * of a lock whose write side admin operations take to swap or drop the region.
 */
final class TableStore {
  /** An operation on the table's region. */
  interface RegionOp<T> {
    T apply(Region region, TableCatalog.Entry entry) throws IOException;
  }

  private final TableName name;
  private final ReentrantReadWriteLock guard = new ReentrantReadWriteLock();
  private volatile TableCatalog.Entry entry;
  private Region region;
  private final Sweeper sweeper;
  /** Cells written since the last sweep was queued ({@link Sweeper}). */
  private final AtomicLong written = new AtomicLong();
  /** Cells to write before the next sweep; Long.MAX_VALUE while one is queued or running. */
  private volatile long sweepThreshold;
  /** A sweep is queued or running. */
  private volatile boolean sweeping;
  /**
   * Engine entries per row, a moving average over the first row of each scan (0: no scan yet);
   * a hint for scans' readahead, so racing updates losing one another do no harm.
   */
  private volatile int cellsPerRow;

  TableStore(TableCatalog.Entry entry, Region region, Sweeper sweeper) {
    this.name = entry.descriptor().getTableName();
    this.entry = entry;
    this.region = region;
    this.sweeper = sweeper;
    this.sweepThreshold = sweeper.initialThreshold();
  }

  /** Called after {@code cells} were written to {@code row} (the sweeper may queue a sweep). */
  void wrote(byte[] row, int cells) {
    sweeper.wrote(this, row, cells);
  }

  /**
   * Counts {@code cells} written; true for exactly one caller once the threshold is reached,
   * which must then queue a sweep and report its end with {@link #sweepDone}.
   */
  boolean addWritten(int cells) {
    long threshold = sweepThreshold;
    if (written.addAndGet(cells) < threshold) return false;
    synchronized (written) {
      if (sweepThreshold != threshold || threshold == Long.MAX_VALUE) return false;
      sweepThreshold = Long.MAX_VALUE;
      sweeping = true;
      written.set(0);
      return true;
    }
  }

  /** True while a sweep of this table is queued or running. */
  boolean sweepPending() {
    return sweeping;
  }

  /** A sweep ended: the next one is due after {@code nextThreshold} more cells. */
  void sweepDone(long nextThreshold) {
    synchronized (written) {
      sweepThreshold = nextThreshold;
      sweeping = false;
    }
  }

  /** The engine entries per row recent scans saw (0: unknown). */
  int cellsPerRow() {
    return cellsPerRow;
  }

  /** A scan's first row held {@code entries} engine entries (cells of every family, versions). */
  void noteCellsPerRow(int entries) {
    int old = cellsPerRow;
    int d = entries - old;
    // An eighth of the way, and at least one entry, so that it reaches a steady count.
    cellsPerRow = old == 0 ? entries : old + (d + 7 * Integer.signum(d)) / 8;
  }

  static String regionName(long id) {
    return "hbase-table-" + id;
  }

  TableName name() {
    return name;
  }

  TableCatalog.Entry entry() {
    return entry;
  }

  TableDescriptor descriptor() {
    return entry.descriptor();
  }

  /** Runs a data operation: the table must exist and be enabled. */
  <T> T data(RegionOp<T> op) throws IOException {
    guard.readLock().lock();
    try {
      TableCatalog.Entry e = entry;
      if (region == null) throw new TableNotFoundException(name);
      if (!e.enabled()) throw new TableNotEnabledException(name);
      return op.apply(region, e);
    } catch (ParallaxException ex) {
      throw Errors.of(ex);
    } finally {
      guard.readLock().unlock();
    }
  }

  /**
   * Runs an admin operation alone on the table: it may replace the entry and the region (null
   * when the table is dropped) through {@code change}.
   */
  void admin(AdminOp op) throws IOException {
    guard.writeLock().lock();
    try {
      if (region == null) throw new TableNotFoundException(name);
      op.apply(this);
    } catch (ParallaxException ex) {
      throw Errors.of(ex);
    } finally {
      guard.writeLock().unlock();
    }
  }

  /** An admin operation; it runs with the table's write lock held. */
  interface AdminOp {
    void apply(TableStore table) throws IOException;
  }

  /** The region, for admin operations (write lock held). */
  Region region() {
    return region;
  }

  /** Replaces the entry and region (write lock held). */
  void change(TableCatalog.Entry newEntry, Region newRegion) {
    entry = newEntry;
    region = newRegion;
  }

  /** Closes the region (the volume is closing). */
  void close() {
    guard.writeLock().lock();
    try {
      if (region != null) region.close();
      region = null;
    } finally {
      guard.writeLock().unlock();
    }
  }
}
