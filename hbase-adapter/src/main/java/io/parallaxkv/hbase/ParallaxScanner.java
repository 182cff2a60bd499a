package io.parallaxkv.hbase;

import io.parallaxkv.ParallaxException;
import io.parallaxkv.Scanner;
import io.parallaxkv.ScanOptions;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.metrics.ScanMetrics;

/**
 * A Scan (or a Get, which is a one-row Scan) as a walk over the table's engine keys. The engine
 * scanner reads one consistent snapshot, so every row is seen whole and as of the scan's start
 * (HBase gives the same per-row consistency). Forward scans walk keys upward; reversed scans
 * find each previous row with {@code seekForPrev} and read its cells upward, since HBase returns
 * the cells inside a row in their usual order either way. Rows are read one at a time, as the
 * caller pulls them. A forward scan tells the engine how many entries it expects to read
 * ({@link #readahead}), so that on data larger than memory their values are asked of the device
 * at once rather than one wait per cell.
 */
final class ParallaxScanner implements ResultScanner {
  private final Scanner keys;
  private final RowReader reader;
  private final boolean reversed;
  private final int batch;
  private final int limit;
  private final ArrayDeque<Result> ready = new ArrayDeque<>();
  private final TableStore table;
  private boolean rowCounted;
  private int rowsReturned;
  private boolean exhausted;
  private boolean closed;

  ParallaxScanner(TableStore table, Scan scan, long now) throws IOException {
    this(table, scan, now, true);
  }

  /**
   * {@code learns}: whether this scan tells the engine its length and teaches the table its
   * cells per row. Sweeps read the rows that gathered the most versions, which would teach it
   * a count no user scan sees.
   */
  ParallaxScanner(TableStore table, Scan scan, long now, boolean learns) throws IOException {
    ReadPlan plan = table.data((region, entry) -> new ReadPlan(scan, entry.descriptor(), now));
    this.reader = new RowReader(plan);
    this.reversed = scan.isReversed();
    this.batch = scan.getBatch();
    this.limit = scan.getLimit();
    this.table = table;
    this.rowCounted = !learns;
    int readahead = reversed || !learns ? 0 : readahead(scan, table.cellsPerRow());
    this.keys = table.data((region, entry) -> region.scanner(bounds(scan).readahead(readahead).build()));
    try {
      if (reversed) keys.seekToLast();
    } catch (ParallaxException e) {
      keys.close();
      throw Errors.of(e);
    }
  }

  /**
   * The engine entries a forward scan expects to read after its first seek: the rows it will
   * return (one for a Get, else its limit, else its caching: the rows HBase's region server reads
   * for one RPC) times the cells per row of the table's recent scans. 0 (no hint) when either is
   * unknown. Reversed scans seek to every row they read, so they tell nothing.
   */
  static int readahead(Scan scan, int cellsPerRow) {
    int rows = scan.isGetScan() ? 1 : scan.getLimit() > 0 ? scan.getLimit() : Math.max(scan.getCaching(), 0);
    return (int) Math.min(Integer.MAX_VALUE, (long) rows * cellsPerRow);
  }

  /** The engine key range of the scan's rows. */
  private static ScanOptions.Builder bounds(Scan scan) {
    byte[] start = scan.getStartRow();
    byte[] stop = scan.getStopRow();
    ScanOptions.Builder b = ScanOptions.builder();
    byte[] low = scan.isReversed() ? stop : start;
    boolean lowInclusive = scan.isReversed() ? scan.includeStopRow() : scan.includeStartRow();
    byte[] high = scan.isReversed() ? start : stop;
    boolean highInclusive = scan.isReversed() ? scan.includeStartRow() : scan.includeStopRow();
    if (low.length > 0) {
      b.lowerBound(lowInclusive ? CellKey.rowStart(low) : CellKey.rowEnd(low), true);
    }
    if (high.length > 0) {
      b.upperBound(highInclusive ? CellKey.rowEnd(high) : CellKey.rowStart(high), false);
    }
    return b;
  }

  @Override
  public Result next() throws IOException {
    if (closed) return null;
    while (ready.isEmpty() && !exhausted) fill();
    return ready.poll();
  }

  /** Reads the next stored row and queues what the read returns of it (maybe nothing). */
  private void fill() throws IOException {
    if ((limit > 0 && rowsReturned >= limit) || reader.filterDone()) {
      exhausted = true;
      return;
    }
    try {
      if (!keys.isValid()) {
        exhausted = true;
        return;
      }
      byte[] row = CellKey.row(keys.key());
      byte[] start = CellKey.rowStart(row);
      if (reversed) keys.seek(start);
      List<Cell> stored = new ArrayList<>();
      int entries = 0;
      for (; keys.isValid() && startsWith(keys.key(), start); keys.next(), entries++) {
        byte[] key = keys.key();
        if (reader.reads(CellKey.family(key))) stored.add(CellKey.decode(key, keys.value()));
      }
      if (!rowCounted) {
        table.noteCellsPerRow(entries);
        rowCounted = true;
      }
      if (reversed) keys.seekForPrev(start);
      RowReader.RowResult r = reader.read(stored);
      if (!r.cells().isEmpty()) queue(r.cells());
      if (r.scanDone()) exhausted = true;
      if (!reversed && r.hint() != null) keys.seek(CellKey.rowStart(CellUtil.cloneRow(r.hint())));
    } catch (ParallaxException e) {
      throw Errors.of(e);
    }
  }

  /** One row's cells as Results: whole, or in chunks of {@code batch} cells. */
  private void queue(List<Cell> cells) {
    rowsReturned++;
    if (batch <= 0 || cells.size() <= batch) {
      ready.add(Result.create(cells));
      return;
    }
    for (int i = 0; i < cells.size(); i += batch) {
      int end = Math.min(cells.size(), i + batch);
      ready.add(Result.create(cells.subList(i, end), null, false, end < cells.size()));
    }
  }

  private static boolean startsWith(byte[] key, byte[] prefix) {
    return key.length >= prefix.length
        && Arrays.equals(key, 0, prefix.length, prefix, 0, prefix.length);
  }

  @Override
  public Result[] next(int nbRows) throws IOException {
    List<Result> out = new ArrayList<>();
    for (int i = 0; i < nbRows; i++) {
      Result r = next();
      if (r == null) break;
      out.add(r);
    }
    return out.toArray(new Result[0]);
  }

  @Override
  public void close() {
    if (closed) return;
    closed = true;
    keys.close();
  }

  @Override
  public boolean renewLease() {
    return !closed;
  }

  @Override
  public ScanMetrics getScanMetrics() {
    return null;
  }

  /** Reads the whole of a scan expected to be small (a Get). */
  static List<Cell> readAll(ParallaxScanner s) throws IOException {
    List<Cell> cells = new ArrayList<>();
    try (s) {
      for (Result r = s.next(); r != null; r = s.next()) cells.addAll(Arrays.asList(r.rawCells()));
    }
    return cells;
  }
}
