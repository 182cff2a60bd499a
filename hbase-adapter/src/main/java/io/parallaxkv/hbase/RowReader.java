package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.util.Bytes;

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
  private final Set<byte[]> closed = new TreeSet<>(Bytes.BYTES_COMPARATOR);

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
    Cell hint = null;
    int start = 0;
    while (start < stored.size()) {
      int end = start + 1;
      while (end < stored.size() && CellUtil.matchingFamily(stored.get(end), stored.get(start))) {
        end++;
      }
      byte[] family = CellUtil.cloneFamily(stored.get(start));
      FamilyMatcher m = plan.matcher(family);
      FamilyMatcher.End e = m.walk(stored.subList(start, end), out);
      if (e == FamilyMatcher.End.DONE_SCAN || filter != null && filter.filterAllRemaining()) {
        // A store scanner that reaches DONE_SCAN closes, and it reaches it as soon as it looks
        // at its next cell (in this row or the next) while the filter says all remaining is
        // filtered: the family is gone for the rest of the scan, though the scan goes on if
        // the filter, once reset between rows, lets it.
        closed.add(family);
      }
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
    return new RowResult(out, filterDone() || closed.size() == plan.familyCount(), hint);
  }

  /** True when {@code family} of a stored cell is one the read wants (and still reads). */
  boolean reads(byte[] family) {
    return plan.reads(family) && !closed.contains(family);
  }
}
