package io.parallaxkv.hbase;

import java.util.NavigableSet;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.util.Bytes;

/** The columns a read names, in order (HBase's {@code ExplicitColumnTracker}). */
final class ExplicitColumns implements ColumnTracker {
  private final byte[][] columns;
  private final int[] counts;
  private final int maxVersions;
  private final int minVersions;
  private final long oldestStamp;
  private int index;
  private long latestTs = Long.MIN_VALUE;

  ExplicitColumns(NavigableSet<byte[]> wanted, int minVersions, int maxVersions, long oldestStamp) {
    this.columns = wanted.toArray(new byte[0][]);
    this.counts = new int[columns.length];
    this.maxVersions = maxVersions;
    this.minVersions = minVersions;
    this.oldestStamp = oldestStamp;
  }

  @Override
  public boolean done() {
    return index >= columns.length;
  }

  private int compare(Cell cell) {
    byte[] c = columns[index];
    return Bytes.compareTo(cell.getQualifierArray(), cell.getQualifierOffset(),
        cell.getQualifierLength(), c, 0, c.length);
  }

  @Override
  public MatchCode checkColumn(Cell cell) {
    while (true) {
      if (done()) return MatchCode.SEEK_NEXT_ROW;
      int cmp = compare(cell);
      if (cmp == 0) return MatchCode.INCLUDE;
      latestTs = Long.MIN_VALUE;
      if (cmp < 0) return MatchCode.SEEK_NEXT_COL;
      index++;
    }
  }

  @Override
  public MatchCode checkVersions(Cell cell) {
    long ts = cell.getTimestamp();
    if (ts == latestTs) return MatchCode.SKIP;
    int count = ++counts[index];
    if (count >= maxVersions || (count >= minVersions && ts < oldestStamp)) {
      index++;
      latestTs = Long.MIN_VALUE;
      return done() ? MatchCode.INCLUDE_AND_SEEK_NEXT_ROW : MatchCode.INCLUDE_AND_SEEK_NEXT_COL;
    }
    latestTs = ts;
    return MatchCode.INCLUDE;
  }

  @Override
  public MatchCode nextRowOrNextColumn(Cell cell) {
    doneWithColumn(cell);
    return done() ? MatchCode.SEEK_NEXT_ROW : MatchCode.SEEK_NEXT_COL;
  }

  @Override
  public void doneWithColumn(Cell cell) {
    while (!done()) {
      int cmp = compare(cell);
      latestTs = Long.MIN_VALUE;
      if (cmp < 0) return;
      index++;
      if (cmp == 0) return;
    }
  }

  @Override
  public boolean isDone(long timestamp) {
    return minVersions <= 0 && timestamp < oldestStamp;
  }
}
