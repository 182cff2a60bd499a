package io.parallaxkv.hbase;

import java.util.HashSet;
import java.util.Set;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.KeyValue;

/**
 * The delete markers seen so far in one family of one row, and whether they mask a put: the
 * rules of HBase's {@code ScanDeleteTracker}, kept identical (one column marker at a time, a
 * less specific marker of the same column ignored) because results must match HBase's byte for
 * byte, quirks included.
 */
final class DeleteTracker {
  enum Result { FAMILY_DELETED, FAMILY_VERSION_DELETED, COLUMN_DELETED, VERSION_DELETED, NOT_DELETED }

  private boolean hasFamilyStamp;
  private long familyStamp;
  private final Set<Long> familyVersionStamps = new HashSet<>();
  private Cell deleteCell;
  private byte deleteType;
  private long deleteTimestamp;

  void add(Cell cell) {
    long ts = cell.getTimestamp();
    byte type = cell.getTypeByte();
    if (hasFamilyStamp && ts <= familyStamp) return;
    if (type == KeyValue.Type.DeleteFamily.getCode()) {
      hasFamilyStamp = true;
      familyStamp = ts;
      return;
    }
    if (type == KeyValue.Type.DeleteFamilyVersion.getCode()) {
      familyVersionStamps.add(ts);
      return;
    }
    if (deleteCell != null && type < deleteType && CellUtil.matchingQualifier(cell, deleteCell)) {
      return; // a less specific marker of the column already seen
    }
    deleteCell = cell;
    deleteType = type;
    deleteTimestamp = ts;
  }

  boolean isEmpty() {
    return deleteCell == null && !hasFamilyStamp && familyVersionStamps.isEmpty();
  }

  Result isDeleted(Cell cell) {
    long ts = cell.getTimestamp();
    if (hasFamilyStamp && ts <= familyStamp) return Result.FAMILY_DELETED;
    if (familyVersionStamps.contains(ts)) return Result.FAMILY_VERSION_DELETED;
    if (deleteCell != null) {
      int cmp = compareQualifiers(cell, deleteCell);
      if (cmp == 0) {
        if (deleteType == KeyValue.Type.DeleteColumn.getCode()) return Result.COLUMN_DELETED;
        if (ts == deleteTimestamp) return Result.VERSION_DELETED;
        deleteCell = null; // the version marker is newer than this put: it masks nothing more
      } else if (cmp > 0) {
        deleteCell = null; // a later column
      }
    }
    return Result.NOT_DELETED;
  }

  static int compareQualifiers(Cell a, Cell b) {
    return org.apache.hadoop.hbase.util.Bytes.compareTo(a.getQualifierArray(),
        a.getQualifierOffset(), a.getQualifierLength(), b.getQualifierArray(),
        b.getQualifierOffset(), b.getQualifierLength());
  }
}
