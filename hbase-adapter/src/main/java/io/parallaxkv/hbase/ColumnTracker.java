package io.parallaxkv.hbase;

import org.apache.hadoop.hbase.Cell;

/**
 * Which columns of a family a read wants and how many versions of each: HBase's
 * {@code ColumnTracker} contract, with its two implementations ported as they are (they differ in
 * how they treat expired versions beyond the minimum, and results must match HBase's).
 */
interface ColumnTracker {
  /** INCLUDE when the cell's column is wanted, else where to go. */
  MatchCode checkColumn(Cell cell);

  /** Counts a put of a wanted column: INCLUDE (and maybe move on), SKIP or SEEK_NEXT_COL. */
  MatchCode checkVersions(Cell cell);

  /** Done with the cell's column: SEEK_NEXT_COL, or SEEK_NEXT_ROW when nothing else is wanted. */
  MatchCode nextRowOrNextColumn(Cell cell);

  /** True when every wanted column has been served. */
  boolean done();

  /** True when a cell this old can only be expired (no minimum versions to keep). */
  boolean isDone(long timestamp);
}
