package io.parallaxkv.hbase;

import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import io.parallaxkv.ScanOptions;
import io.parallaxkv.WriteBatch;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;

/**
 * Deletes, row by row, the stored cells no read can return any more, as HBase drops them when it
 * writes store files. Each row is rewritten under its row lock, so writers are never mixed in;
 * the deleted pairs become garbage for the engine's own compaction.
 */
final class Compaction {
  /** What a pass drops, as HBase's two kinds of store file writing do. */
  enum Kind {
    /**
     * A memstore flush or minor compaction: puts masked by a delete marker, versions beyond the
     * family's maximum, and cells expired by TTL beyond the minimum versions. Delete markers
     * stay (they still mask older puts written later). Reads answer as before, except the two
     * that in HBase too answer differently after a flush: a version beyond the maximum can no
     * longer be uncovered by deleting a newer one or reached through a time range.
     */
    FLUSH,
    /**
     * A major compaction: as FLUSH, and the delete markers too. As in HBase, a put older than a
     * dropped marker is visible again afterwards.
     */
    MAJOR
  }

  /** The outcome of a pass: engine pairs deleted and kept. */
  record Result(long dropped, long kept) {}

  private static final int BATCH = 1000;

  private Compaction() {}

  /** Runs a pass over every row of {@code table}, stopping early once {@code stop} says so. */
  static Result run(TableStore table, RowLocks locks, Kind kind, BooleanSupplier stop)
      throws IOException {
    return table.data((region, entry) -> {
      long dropped = 0;
      long stored = 0;
      try (Scanner rows = region.scanner()) {
        while (rows.isValid() && !stop.getAsBoolean()) {
          byte[] row = CellKey.row(rows.key());
          ReentrantLock lock = locks.of(entry.id(), row);
          lock.lock();
          try {
            long[] counts = compactRow(table, region, row, kind);
            dropped += counts[0];
            stored += counts[1];
          } finally {
            lock.unlock();
          }
          rows.seek(CellKey.rowEnd(row));
        }
      }
      return new Result(dropped, stored - dropped);
    });
  }

  /** Runs a pass over one row of {@code table}. */
  static Result runRow(TableStore table, RowLocks locks, byte[] row, Kind kind) throws IOException {
    return table.data((region, entry) -> {
      ReentrantLock lock = locks.of(entry.id(), row);
      lock.lock();
      try {
        long[] counts = compactRow(table, region, row, kind);
        return new Result(counts[0], counts[1] - counts[0]);
      } finally {
        lock.unlock();
      }
    });
  }

  /** Compacts one row (its lock held); returns {pairs deleted, pairs the row had}. */
  private static long[] compactRow(TableStore table, Region region, byte[] row, Kind kind)
      throws IOException {
    Set<ByteBuffer> kept = new HashSet<>();
    List<Cell> visible = ParallaxScanner.readAll(new ParallaxScanner(table,
        new Scan(new Get(row).readAllVersions()), EnvironmentEdgeManager.currentTime(), false));
    for (Cell c : visible) kept.add(ByteBuffer.wrap(CellKey.of(c)));
    List<byte[]> drop = new ArrayList<>();
    long stored = 0;
    try (Scanner s = region.scanner(ScanOptions.builder().prefix(CellKey.rowStart(row)).build())) {
      for (; s.isValid(); s.next()) {
        byte[] key = s.key();
        stored++;
        if (kind == Kind.FLUSH && CellKey.isDeleteMarker(key)) continue;
        if (!kept.contains(ByteBuffer.wrap(key))) drop.add(key);
      }
    }
    try (WriteBatch batch = new WriteBatch()) {
      for (int i = 0; i < drop.size(); i++) {
        batch.delete(drop.get(i));
        if (batch.count() == BATCH || i == drop.size() - 1) {
          region.write(batch);
          batch.clear();
        }
      }
    }
    return new long[] {drop.size(), stored};
  }
}
