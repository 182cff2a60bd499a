package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellComparator;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.PrivateCellUtil;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.io.TimeRange;

/**
 * Reads one family of one row the way an HBase store scanner does for a user scan: delete
 * markers mask puts, then the time range, the wanted columns, the version count, and the scan's
 * filter ({@code filterCell}, {@code transformCell}) decide cell by cell, in key order. This is
 * HBase's {@code UserScanQueryMatcher} and {@code StoreScanner} loop, kept step for step so that
 * filters see the same cells in the same order as on a region server.
 */
final class FamilyMatcher {
  /** How a family's walk ended. */
  enum End { ROW, DONE_SCAN }

  private final ColumnTracker columns;
  private final DeleteTracker deletes = new DeleteTracker();
  private final TimeRange timeRange;
  private final Filter filter;
  private final boolean reversed;
  private final int versionsAfterFilter;
  private final int storeLimit;
  private final int storeOffset;
  private Cell currentColumn;
  private int countAfterFilter;
  private int countPerRow;
  /** A filter's seek hint that points past this family's cells of the row, or null. */
  private Cell hintBeyond;

  FamilyMatcher(ColumnTracker columns, TimeRange timeRange, Filter filter,
      int versionsAfterFilter, int storeLimit, int storeOffset, boolean reversed) {
    this.columns = columns;
    this.reversed = reversed;
    this.timeRange = timeRange;
    this.filter = filter;
    this.versionsAfterFilter = versionsAfterFilter;
    this.storeLimit = storeLimit;
    this.storeOffset = storeOffset;
  }

  /** The filter hint past this family's cells (set by a SEEK_NEXT_USING_HINT), or null. */
  Cell hintBeyond() {
    return hintBeyond;
  }

  /** Walks {@code cells} (one family of one row, key order) and adds what the read returns. */
  End walk(List<? extends Cell> cells, List<Cell> out) throws IOException {
    int i = 0;
    int n = cells.size();
    while (i < n) {
      // Once the family's per-row limit is reached the store moves to the next row without
      // showing the filter another cell (a region server does; filters count what they see).
      if (storeLimit > -1 && countPerRow >= storeLimit + storeOffset) return End.ROW;
      Cell cell = cells.get(i);
      MatchCode code = match(cell);
      switch (code) {
        case INCLUDE, INCLUDE_AND_SEEK_NEXT_COL, INCLUDE_AND_SEEK_NEXT_ROW -> {
          Cell shown = filter == null ? cell : filter.transformCell(cell);
          countPerRow++;
          if (countPerRow > storeOffset) out.add(shown);
          if (code == MatchCode.INCLUDE_AND_SEEK_NEXT_ROW) return End.ROW;
          i = code == MatchCode.INCLUDE ? i + 1 : nextColumn(cells, i);
        }
        case SKIP -> i++;
        case SEEK_NEXT_COL -> i = nextColumn(cells, i);
        case SEEK_NEXT_ROW -> {
          return End.ROW;
        }
        case DONE_SCAN -> {
          return End.DONE_SCAN;
        }
        case SEEK_NEXT_USING_HINT -> {
          Cell hint = filter.getNextCellHint(cell);
          if (reversed) {
            // A reversed store scanner follows only hints pointing backwards, which leave the
            // row (a filter's previous-row hint): a hint inside the row is a plain skip.
            if (hint != null && CellComparator.getInstance().compare(hint, cell) < 0
                && !CellUtil.matchingRows(hint, cell)) {
              return End.ROW;
            }
            i++;
          } else if (hint == null || CellComparator.getInstance().compare(hint, cell) <= 0) {
            i++;
          } else {
            // The seek skips every cell before the hint, delete markers included, as HBase's
            // StoreScanner does.
            while (i < n && CellComparator.getInstance().compare(cells.get(i), hint) < 0) i++;
            if (i == n) hintBeyond = hint;
          }
        }
      }
    }
    return End.ROW;
  }

  /**
   * The index of the first cell of the next column. HBase does not jump past the rest of an
   * empty-qualifier column: family delete markers live there and must still be seen.
   */
  private static int nextColumn(List<? extends Cell> cells, int i) {
    Cell cell = cells.get(i);
    if (cell.getQualifierLength() == 0) return i + 1;
    int j = i + 1;
    while (j < cells.size() && DeleteTracker.compareQualifiers(cells.get(j), cell) == 0) j++;
    return j;
  }

  private MatchCode match(Cell cell) throws IOException {
    if (filter != null && filter.filterAllRemaining()) return MatchCode.DONE_SCAN;
    if (columns.done()) return MatchCode.SEEK_NEXT_ROW;
    long ts = cell.getTimestamp();
    if (columns.isDone(ts)) return columns.nextRowOrNextColumn(cell);
    if (PrivateCellUtil.isDelete(cell.getTypeByte())) {
      if (timeRange.withinOrAfterTimeRange(ts)) deletes.add(cell);
      return MatchCode.SKIP;
    }
    if (!deletes.isEmpty()) {
      switch (deletes.isDeleted(cell)) {
        case FAMILY_DELETED, COLUMN_DELETED -> {
          return columns.nextRowOrNextColumn(cell);
        }
        case VERSION_DELETED, FAMILY_VERSION_DELETED -> {
          return MatchCode.SKIP;
        }
        case NOT_DELETED -> { }
      }
    }
    int tsCmp = timeRange.compare(ts);
    if (tsCmp > 0) return MatchCode.SKIP;
    if (tsCmp < 0) return columns.nextRowOrNextColumn(cell);
    MatchCode code = columns.checkColumn(cell);
    if (code != MatchCode.INCLUDE) return code;
    code = columns.checkVersions(cell);
    if (code == MatchCode.SKIP || code == MatchCode.SEEK_NEXT_COL) return code;
    return filter == null ? code : mergeFilterResponse(cell, code, filter.filterCell(cell));
  }

  /** HBase's {@code UserScanQueryMatcher.mergeFilterResponse}. */
  private MatchCode mergeFilterResponse(Cell cell, MatchCode code, Filter.ReturnCode response) {
    switch (response) {
      case SKIP -> {
        if (code == MatchCode.INCLUDE) return MatchCode.SKIP;
        if (code == MatchCode.INCLUDE_AND_SEEK_NEXT_COL) return MatchCode.SEEK_NEXT_COL;
        return MatchCode.SEEK_NEXT_ROW;
      }
      case NEXT_COL -> {
        if (code == MatchCode.INCLUDE || code == MatchCode.INCLUDE_AND_SEEK_NEXT_COL) {
          return columns.nextRowOrNextColumn(cell);
        }
        return MatchCode.SEEK_NEXT_ROW;
      }
      case NEXT_ROW -> {
        return MatchCode.SEEK_NEXT_ROW;
      }
      case SEEK_NEXT_USING_HINT -> {
        return MatchCode.SEEK_NEXT_USING_HINT;
      }
      case INCLUDE -> { }
      case INCLUDE_AND_NEXT_COL -> {
        if (code == MatchCode.INCLUDE) code = MatchCode.INCLUDE_AND_SEEK_NEXT_COL;
      }
      case INCLUDE_AND_SEEK_NEXT_ROW -> code = MatchCode.INCLUDE_AND_SEEK_NEXT_ROW;
    }
    // The scan's version limit counts the versions the filter let through.
    if (currentColumn == null || DeleteTracker.compareQualifiers(cell, currentColumn) != 0) {
      countAfterFilter = 0;
      currentColumn = cell;
    }
    countAfterFilter++;
    if (countAfterFilter > versionsAfterFilter) {
      code = code == MatchCode.INCLUDE_AND_SEEK_NEXT_ROW ? MatchCode.SEEK_NEXT_ROW
          : MatchCode.SEEK_NEXT_COL;
    }
    if (code == MatchCode.INCLUDE_AND_SEEK_NEXT_COL || code == MatchCode.SEEK_NEXT_COL) {
      columns.doneWithColumn(cell);
    }
    return code;
  }
}
