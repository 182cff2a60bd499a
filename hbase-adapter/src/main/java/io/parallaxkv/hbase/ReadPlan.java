package io.parallaxkv.hbase;

import java.io.IOException;
import java.util.Map;
import java.util.NavigableSet;
import java.util.TreeMap;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.HConstants;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptor;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.filter.Filter;
import org.apache.hadoop.hbase.io.TimeRange;
import org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException;
import org.apache.hadoop.hbase.shaded.protobuf.ProtobufUtil;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * What a Get or Scan reads from each family — columns, time range, versions, TTL horizon — and
 * its filter, fixed once per read (the clock included: TTL is judged at one instant, as a region
 * server does when it opens a scanner).
 */
final class ReadPlan {
  private final Scan scan;
  private final TableDescriptor table;
  private final long now;
  /** The families read, each with its wanted qualifiers (null: all of them). */
  private final TreeMap<byte[], NavigableSet<byte[]>> families = new TreeMap<>(Bytes.BYTES_COMPARATOR);
  private final Filter filter;

  ReadPlan(Scan scan, TableDescriptor table, long now) throws IOException {
    if (scan.isRaw()) {
      throw new UnsupportedOperationException("Scan.setRaw: raw scans (delete markers and"
          + " masked cells) are not supported by the Parallax HBase adapter");
    }
    this.scan = scan;
    this.table = table;
    this.now = now;
    if (scan.hasFamilies()) {
      for (Map.Entry<byte[], NavigableSet<byte[]>> e : scan.getFamilyMap().entrySet()) {
        if (!table.hasColumnFamily(e.getKey())) {
          throw new NoSuchColumnFamilyException("Column family " + Bytes.toString(e.getKey())
              + " does not exist in region of table " + table.getTableName());
        }
        NavigableSet<byte[]> q = e.getValue();
        families.put(e.getKey(), q == null || q.isEmpty() ? null : q);
      }
    } else {
      for (ColumnFamilyDescriptor f : table.getColumnFamilies()) families.put(f.getName(), null);
    }
    this.filter = scan.getFilter() == null ? null : freshCopy(scan.getFilter());
    if (filter != null && scan.isReversed() && loadsFamiliesOnDemand(scan)) {
      for (byte[] family : families.keySet()) {
        if (!filter.isFamilyEssential(family)) {
          throw new DoNotRetryIOException("Reverse scan with loading CFs on demand is not supported");
        }
      }
    }
    // A region server tells the filter the scan's direction (HRegion.instantiateRegionScanner).
    if (filter != null && scan.isReversed()) filter.setReversed(true);
  }

  /**
   * A region server loads the families a filter does not need ("non-essential") only for rows
   * the filter accepts, unless the scan says otherwise; HBase cannot do that in reverse. This
   * adapter reads all families together either way, which returns the same cells going
   * forward, and refuses the reversed case as HBase does.
   */
  private static boolean loadsFamiliesOnDemand(Scan scan) {
    Boolean v = scan.getLoadColumnFamiliesOnDemandValue();
    return v == null || v;
  }

  /**
   * The filter as a region server gets it: serialized and parsed back, so that its state starts
   * fresh for every read even when the caller reuses the Scan (as a region server's copy does).
   */
  private static Filter freshCopy(Filter f) throws IOException {
    return ProtobufUtil.toFilter(ProtobufUtil.toFilter(f));
  }

  Scan scan() {
    return scan;
  }

  Filter filter() {
    return filter;
  }

  int familyCount() {
    return families.size();
  }

  boolean reads(byte[] family) {
    return families.containsKey(family);
  }

  /** A matcher for one row of {@code family}, which {@link #reads} must accept. */
  FamilyMatcher matcher(byte[] family) {
    ColumnFamilyDescriptor f = table.getColumnFamily(family);
    int familyMax = f.getMaxVersions();
    int resultMax = Math.min(scan.getMaxVersions(), familyMax);
    int toCheck = scan.hasFilter() ? familyMax : resultMax;
    int ttl = f.getTimeToLive();
    long oldest = ttl == HConstants.FOREVER ? Long.MIN_VALUE : now - ttl * 1000L;
    NavigableSet<byte[]> wanted = families.get(family);
    ColumnTracker columns = wanted == null
        ? new WildcardColumns(f.getMinVersions(), toCheck, oldest)
        : new ExplicitColumns(wanted, f.getMinVersions(), toCheck, oldest);
    TimeRange tr = scan.getColumnFamilyTimeRange().getOrDefault(family, scan.getTimeRange());
    return new FamilyMatcher(columns, tr, filter, filter == null ? 0 : resultMax,
        scan.getMaxResultsPerColumnFamily(), scan.getRowOffsetPerColumnFamily(), scan.isReversed());
  }
}
