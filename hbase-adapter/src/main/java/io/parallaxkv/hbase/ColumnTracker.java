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

  /**
   * The read moves past the cell's column because of the filter or the scan's version count
   * (HBase's {@code doneWithColumn}): a named-column tracker stops wanting it, so further
   * versions of that column are no longer shown to the filter. This matters for the empty
   * qualifier, whose versions a store scanner still walks one by one.
   */
  default void doneWithColumn(Cell cell) {}

  /** True when every wanted column has been served. */
  boolean done();

  /** True when a cell this old can only be expired (no minimum versions to keep). */
  boolean isDone(long timestamp);
}
