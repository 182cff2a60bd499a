package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.filter.Filter;

/**
 * Turns the stored cells of one row into the cells a read returns, with HBase's row-level filter
 * protocol around the per-family matchers ({@code RegionScannerImpl.nextInternal}):
 * {@code filterRowKey} first, then the families in order, then {@code filterRowCells} /
 * {@code filterRow}, and {@code reset} between rows.
 */
final class RowReader {
  /** The outcome of one row: its cells (empty when filtered out), and whether the scan ends. */
  record RowResult(List<Cell> cells, boolean scanDone, Cell hint) {}

  private final ReadPlan plan;
  private final Filter filter;

  RowReader(ReadPlan plan) {
    this.plan = plan;
    this.filter = plan.filter();
  }

  /** The filter said no further row can match. */
  boolean filterDone() throws IOException {
    return filter != null && filter.filterAllRemaining();
  }

  /** Reads one row; {@code stored} are the row's cells of the families read, in key order. */
  RowResult read(List<Cell> stored) throws IOException {
    List<Cell> out = new ArrayList<>();
    if (stored.isEmpty()) return new RowResult(out, filterDone(), null);
    if (filter != null && (filter.filterAllRemaining() || filter.filterRowKey(stored.get(0)))) {
      filter.reset();
      return new RowResult(out, filterDone(), null);
    }
    boolean done = false;
    Cell hint = null;
    int start = 0;
    while (start < stored.size() && !done) {
      int end = start + 1;
      while (end < stored.size() && CellUtil.matchingFamily(stored.get(end), stored.get(start))) {
        end++;
      }
      FamilyMatcher m = plan.matcher(CellUtil.cloneFamily(stored.get(start)));
      done = m.walk(stored.subList(start, end), out) == FamilyMatcher.End.DONE_SCAN;
      if (m.hintBeyond() != null && !CellUtil.matchingRows(m.hintBeyond(), stored.get(0))) {
        hint = m.hintBeyond();
      }
      start = end;
    }
    // HBase's FilterWrapper.filterRowCellsWithRet, then RegionScannerImpl's exclusion test.
    boolean excluded = out.isEmpty();
    if (filter != null && filter.hasFilterRow()) {
      filter.filterRowCells(out);
      if (!out.isEmpty() && filter.filterRow()) excluded = true;
    } else if (!excluded && filter != null && filter.filterRow()) {
      excluded = true;
    }
    if (excluded) out.clear();
    if (filter != null) filter.reset();
    return new RowResult(out, done || filterDone(), hint);
  }

  /** True when {@code family} of a stored cell is one the read wants. */
  boolean reads(byte[] family) {
    return plan.reads(family);
  }
}
