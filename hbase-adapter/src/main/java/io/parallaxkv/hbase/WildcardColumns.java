package io.parallaxkv.hbase;

import org.apache.hadoop.hbase.Cell;

/** Every column of a family (HBase's {@code ScanWildcardColumnTracker}). */
final class WildcardColumns implements ColumnTracker {
  private final int maxVersions;
  private final int minVersions;
  private final long oldestStamp;
  private Cell column;
  private int count;
  private long latestTs = Long.MIN_VALUE;
  private byte latestType;

  WildcardColumns(int minVersions, int maxVersions, long oldestStamp) {
    this.maxVersions = maxVersions;
    this.minVersions = minVersions;
    this.oldestStamp = oldestStamp;
  }

  @Override
  public MatchCode checkColumn(Cell cell) {
    return MatchCode.INCLUDE;
  }

  @Override
  public MatchCode checkVersions(Cell cell) {
    if (column == null || DeleteTracker.compareQualifiers(cell, column) != 0) {
      column = cell;
      count = 0;
      latestTs = Long.MIN_VALUE;
    } else if (cell.getTimestamp() == latestTs && cell.getTypeByte() == latestType) {
      return MatchCode.SKIP;
    }
    count++;
    if (count > maxVersions) return MatchCode.SEEK_NEXT_COL;
    if (count <= minVersions || cell.getTimestamp() >= oldestStamp) {
      latestTs = cell.getTimestamp();
      latestType = cell.getTypeByte();
      return MatchCode.INCLUDE;
    }
    return MatchCode.SEEK_NEXT_COL;
  }

  @Override
  public MatchCode nextRowOrNextColumn(Cell cell) {
    return MatchCode.SEEK_NEXT_COL;
  }

  @Override
  public boolean done() {
    return false;
  }

  @Override
  public boolean isDone(long timestamp) {
    return minVersions <= 0 && timestamp < oldestStamp;
  }
}
