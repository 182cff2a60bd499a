package io.parallaxkv.internal;

/**
 * Sizes and offsets of the C structs and limits of {@code parallax.h} (LP64). The FFM backend
 * and the shared encoders rely on them, so every backend checks them at load against what the
 * library was built with ({@code par_abi_layout}, {@link #check}): a library from another build
 * is refused instead of mis-encoding options. Struct buffers are allocated with generous slack
 * ({@link #STRUCT_SLACK}) so that a newer engine that grows a struct cannot write past them.
 */
public final class Layout {
  private Layout() {}

  public static final int STRUCT_SLACK = 4096;

  public static final int OPTIONS_SIZE = 72;
  public static final int OPT_L0_SIZE = 0;
  public static final int OPT_GROWTH_FACTOR = 8;
  public static final int OPT_DURABILITY_MS = 12;
  public static final int OPT_COMPACTION_THREADS = 16;
  public static final int OPT_DIRECT_IO = 20;
  public static final int OPT_MAX_VOLUME_SIZE = 24;
  public static final int OPT_CREATE_IF_MISSING = 32;
  public static final int OPT_PLACEMENT = 40;
  public static final int OPT_SMALL_THRESHOLD = 44;
  public static final int OPT_LARGE_THRESHOLD = 48;
  public static final int OPT_GC_THRESHOLD_PCT = 52;
  public static final int OPT_MEDIUM_MERGE_LEVEL = 56;
  public static final int OPT_MEMORY_BUDGET_MIB = 60;
  public static final int OPT_SORT_LARGE_VALUES = 64;
  public static final int OPT_WARM_MIB = 68;

  public static final int STATS_SIZE = 928;
  public static final int STATS_PUTS = 0;
  public static final int STATS_LAST_LSN = 96;
  public static final int STATS_LEVELS = 104;
  public static final int STATS_LEVEL = 112;
  public static final int STATS_SMALL_PUTS = 544;
  public static final int STATS_PLACEMENT_COUNTERS = 15;
  public static final int STATS_MEDIUM_LOG_BYTES = 656;
  /** Three arrays of (MAX_LEVELS + 1) u64: leaf bytes written per level, small/medium/large. */
  public static final int STATS_LEVEL_CLASS_BYTES = 664;
  /** Two u64: values read from the medium log, then from the large log, by user reads. */
  public static final int STATS_LOG_VALUE_READS = 880;
  /** Two u64: estimated keys, then pending compaction bytes. */
  public static final int STATS_ESTIMATED_KEYS = 896;
  /** u64: large-log bytes merges copied into the last level in key order. */
  public static final int STATS_LARGE_LOG_BYTES_SORTED = 912;
  /** u64: bytes of the levels' nodes the warm-up after the open read. */
  public static final int STATS_WARM_BYTES_READ = 920;
  public static final int LEVEL_STATS_SIZE = 48;
  public static final int LEVEL_HEIGHT = 40;
  public static final int VOLUME_STATS_SIZE = 64;
  /** Three u64: memory budget, memory used, memory peak. */
  public static final int VOLUME_STATS_MEMORY = 32;
  /** u64: free segments whose blocks went back to the file system. */
  public static final int VOLUME_STATS_RELEASED = 56;
  /** {@code par_range_estimate}: entries, then bytes (u64 each). */
  public static final int RANGE_ESTIMATE_SIZE = 16;
  /** {@code par_checkpoint_stats}: segments, segments copied, bytes copied, bytes read (u64). */
  public static final int CHECKPOINT_STATS_SIZE = 32;

  public static final int MAX_KEY_SIZE = 1024;
  public static final int MAX_VALUE_SIZE = 64 << 20;
  public static final int MAX_BATCH_SIZE = 1536 * 1024;
  public static final int MAX_REGION_NAME = 127;
  public static final int MAX_LEVELS = 8;

  /** The values above in the order of {@code par_abi_layout}. */
  public static long[] expected() {
    return new long[] {OPTIONS_SIZE, OPT_L0_SIZE, OPT_GROWTH_FACTOR, OPT_DURABILITY_MS,
        OPT_COMPACTION_THREADS, OPT_DIRECT_IO, OPT_MAX_VOLUME_SIZE, OPT_CREATE_IF_MISSING,
        OPT_PLACEMENT, OPT_SMALL_THRESHOLD, OPT_LARGE_THRESHOLD, OPT_GC_THRESHOLD_PCT,
        OPT_MEDIUM_MERGE_LEVEL, STATS_SIZE, STATS_PUTS, STATS_LAST_LSN, STATS_LEVELS,
        STATS_LEVEL, STATS_SMALL_PUTS, STATS_MEDIUM_LOG_BYTES, STATS_LEVEL_CLASS_BYTES,
        STATS_LOG_VALUE_READS,
        LEVEL_STATS_SIZE,
        LEVEL_HEIGHT, VOLUME_STATS_SIZE, MAX_KEY_SIZE, MAX_VALUE_SIZE, MAX_BATCH_SIZE,
        MAX_REGION_NAME, MAX_LEVELS, STATS_ESTIMATED_KEYS, RANGE_ESTIMATE_SIZE,
        CHECKPOINT_STATS_SIZE, OPT_MEMORY_BUDGET_MIB, VOLUME_STATS_MEMORY, VOLUME_STATS_RELEASED,
        OPT_SORT_LARGE_VALUES, STATS_LARGE_LOG_BYTES_SORTED, OPT_WARM_MIB, STATS_WARM_BYTES_READ};
  }

  /**
   * Throws, naming the first difference, unless {@code actual} (what {@code library} reports)
   * starts with {@link #expected()}; a longer list is a newer library that only appended.
   */
  public static void check(long[] actual, Object library) {
    long[] want = expected();
    for (int i = 0; i < want.length; i++) {
      if (i >= actual.length || actual[i] != want[i]) {
        throw new IllegalStateException(library + " was built from another version of parallax.h"
            + " than this API: layout value " + i + " is "
            + (i < actual.length ? String.valueOf(actual[i]) : "missing") + ", expected "
            + want[i] + "; use the library this jar embeds, or a matching build");
      }
    }
  }
}
