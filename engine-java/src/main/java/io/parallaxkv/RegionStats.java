package io.parallaxkv;

import java.util.List;

/**
 * Counters of one region ({@code par_stats}), from {@link Region#stats()}.
 *
 * @param puts             puts since the region was opened
 * @param deletes          deletes
 * @param gets             point lookups
 * @param scans            scanners opened
 * @param userBytesWritten key + value bytes of puts and deletes
 * @param walBytesAppended record bytes appended to the write-ahead log
 * @param walSyncs         fdatasync calls on the write-ahead log
 * @param walSegments      segments the write-ahead log holds now
 * @param l0Bytes          memory of the active L0
 * @param l0Entries        entries in the active L0
 * @param compactions      completed compactions (L0 to L1 included)
 * @param writeStalls      writes that waited for a full L0 or for the large log's GC
 * @param lastLsn          newest log sequence number
 * @param deepestLevel     deepest non-empty device level (0: none)
 * @param levels           per-level counters, L1 first ({@link Parallax#MAX_LEVELS} entries)
 * @param placement        hybrid-placement counters (size classes, value logs, GC)
 * @param estimatedKeys    entries in L0 and every level (RocksDB's {@code estimate-num-keys}):
 *                         a key overwritten or deleted since its last merge counts once per
 *                         version and tombstone, so this is the number of live keys after
 *                         {@link Region#compact()}, and an upper bound on it otherwise
 * @param pendingCompactionBytes bytes the merges already due would read (a frozen L0 and L1,
 *                         each level over its capacity and the level below, and the spills these
 *                         would in turn cause; they write about as much): 0 when compaction has
 *                         caught up (RocksDB's {@code estimate-pending-compaction-bytes})
 * @param warmBytesRead    bytes of the levels' nodes the warm-up after the open read into the
 *                         page cache ({@link Options.Builder#warmMiB})
 */
public record RegionStats(long puts, long deletes, long gets, long scans, long userBytesWritten,
    long walBytesAppended, long walSyncs, long walSegments, long l0Bytes, long l0Entries,
    long compactions, long writeStalls, long lastLsn, int deepestLevel, List<LevelStats> levels,
    Placement placement, long estimatedKeys, long pendingCompactionBytes, long warmBytesRead) {

  /**
   * Hybrid-placement counters of {@code par_stats}, by the size class of each put.
   *
   * @param smallPuts             puts of small pairs
   * @param mediumPuts            puts of medium pairs
   * @param largePuts             puts of large pairs
   * @param smallBytes            key + value bytes of small puts
   * @param mediumBytes           key + value bytes of medium puts
   * @param largeBytes            key + value bytes of large puts
   * @param largeLogBytesAppended record bytes appended to the large log (user writes and GC)
   * @param largeLogSegments      segments the large log holds now
   * @param largeLogGarbageBytes  large-log bytes known dead, awaiting GC
   * @param gcRuns                large-log segments collected
   * @param gcBytesScanned        record bytes read by GC
   * @param gcBytesRelocated      live record bytes GC re-appended
   * @param gcSegmentsFreed       segments GC freed
   * @param mediumLogSegments     transient medium-log segments now
   * @param mediumLogBytesWritten medium-log bytes written by flushes since the region opened
   * @param mediumLogValueReads   values gets and scanners read from the medium log (a scanner
   *                              reads a value only when it is asked for)
   * @param largeLogValueReads    values gets and scanners read from the large log
   * @param largeLogBytesSorted   large-log record bytes merges copied into the last level in key
   *                              order ({@link Options.Builder#sortLargeValues})
   */
  public record Placement(long smallPuts, long mediumPuts, long largePuts, long smallBytes,
      long mediumBytes, long largeBytes, long largeLogBytesAppended, long largeLogSegments,
      long largeLogGarbageBytes, long gcRuns, long gcBytesScanned, long gcBytesRelocated,
      long gcSegmentsFreed, long mediumLogSegments, long mediumLogBytesWritten,
      long mediumLogValueReads, long largeLogValueReads, long largeLogBytesSorted) {}

  /** The counters of level {@code n} (1-based). */
  public LevelStats level(int n) {
    return levels.get(n - 1);
  }
}
