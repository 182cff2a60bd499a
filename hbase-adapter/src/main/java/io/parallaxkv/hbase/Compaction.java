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
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.util.EnvironmentEdgeManager;

/**
 * {@code Admin.majorCompact}: deletes, row by row, every stored cell a read of all versions would
 * not return — versions beyond the family's maximum, cells expired by TTL beyond the minimum
 * versions, cells masked by delete markers, and the markers themselves. That is what an HBase
 * major compaction drops, and as there, a put older than a dropped marker is no longer masked
 * afterwards. Each row is rewritten under its row lock, so writers are never mixed in.
 */
final class MajorCompaction {
  private static final int BATCH = 1000;

  private MajorCompaction() {}

  /** Compacts every row of {@code table}; returns the number of engine pairs deleted. */
  static long run(TableStore table, RowLocks locks) throws IOException {
    return table.data((region, entry) -> {
      long dropped = 0;
      try (Scanner rows = region.scanner()) {
        while (rows.isValid()) {
          byte[] row = CellKey.row(rows.key());
          ReentrantLock lock = locks.of(entry.id(), row);
          lock.lock();
          try {
            dropped += compactRow(table, region, row);
          } finally {
            lock.unlock();
          }
          rows.seek(CellKey.rowEnd(row));
        }
      }
      return dropped;
    });
  }

  private static long compactRow(TableStore table, Region region, byte[] row) throws IOException {
    Set<ByteBuffer> kept = new HashSet<>();
    List<Cell> visible = ParallaxScanner.readAll(new ParallaxScanner(table,
        new Scan(new Get(row).readAllVersions()), EnvironmentEdgeManager.currentTime()));
    for (Cell c : visible) kept.add(ByteBuffer.wrap(CellKey.of(c)));
    List<byte[]> drop = new ArrayList<>();
    try (Scanner s = region.scanner(ScanOptions.builder().prefix(CellKey.rowStart(row)).build())) {
      for (; s.isValid(); s.next()) {
        byte[] key = s.key();
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
    return drop.size();
  }
}
