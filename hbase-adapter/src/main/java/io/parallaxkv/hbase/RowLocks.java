package io.parallaxkv.hbase;

import java.util.Arrays;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Per-row write locks, striped: every write to a row holds its row's stripe while it reads what
 * it depends on (the latest version for a Delete, the current value for an Increment, the
 * condition of a checkAndMutate) and writes, so that those operations are linearizable per row
 * as on a region server. Rows that share a stripe only serialize with each other.
 */
final class RowLocks {
  private static final int STRIPES = 1024;
  private final ReentrantLock[] locks = new ReentrantLock[STRIPES];

  RowLocks() {
    for (int i = 0; i < STRIPES; i++) locks[i] = new ReentrantLock();
  }

  /** The lock of {@code row} of the table with id {@code tableId}. */
  ReentrantLock of(long tableId, byte[] row) {
    int h = Arrays.hashCode(row) * 31 + Long.hashCode(tableId);
    return locks[Math.floorMod(h ^ (h >>> 16), STRIPES)];
  }
}
