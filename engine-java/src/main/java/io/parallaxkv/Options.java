package io.parallaxkv;

import java.time.Duration;
import java.util.Objects;

/**
 * Engine options for {@link Parallax#open(java.nio.file.Path, Options)}: every field of the C
 * {@code par_options}. Unset fields keep the engine's defaults ({@code par_options_init}).
 * Immutable; build with {@link #builder()}.
 *
 * <pre>{@code
 * Options o = Options.builder().l0Size(256 << 10).durabilityInterval(Duration.ofMillis(10)).build();
 * }</pre>
 */
public final class Options {
  /** The engine defaults. */
  public static final Options DEFAULTS = builder().build();

  final Long l0Size;
  final Integer growthFactor;
  final Integer durabilityIntervalMs;
  final Integer compactionThreads;
  final Boolean useDirectIo;
  final Long maxVolumeSize;
  final Boolean createIfMissing;
  final Placement placement;
  final Integer smallThreshold;
  final Integer largeThreshold;
  final Integer gcThresholdPercent;
  final Integer mediumMergeLevel;
  final Integer memoryBudgetMiB;
  final Boolean sortLargeValues;
  final Integer warmMiB;

  /** Where values live ({@code par_placement}). */
  public enum Placement {
    /** Small pairs in the leaves, medium values in transient logs, large values in a log. */
    HYBRID,
    /** Every pair in the B+-tree leaves (RocksDB-like). */
    IN_PLACE,
    /** Every value in the large log (BlobDB-like). */
    IN_LOG
  }

  private Options(Builder b) {
    placement = b.placement;
    smallThreshold = b.smallThreshold;
    largeThreshold = b.largeThreshold;
    gcThresholdPercent = b.gcThresholdPercent;
    mediumMergeLevel = b.mediumMergeLevel;
    memoryBudgetMiB = b.memoryBudgetMiB;
    sortLargeValues = b.sortLargeValues;
    warmMiB = b.warmMiB;
    l0Size = b.l0Size;
    growthFactor = b.growthFactor;
    durabilityIntervalMs = b.durabilityIntervalMs;
    compactionThreads = b.compactionThreads;
    useDirectIo = b.useDirectIo;
    maxVolumeSize = b.maxVolumeSize;
    createIfMissing = b.createIfMissing;
  }

  /** A builder with every option at the engine default. */
  public static Builder builder() {
    return new Builder();
  }

  @Override
  public String toString() {
    return "Options{l0Size=" + l0Size + ", growthFactor=" + growthFactor + ", durabilityIntervalMs="
        + durabilityIntervalMs + ", compactionThreads=" + compactionThreads + ", useDirectIo="
        + useDirectIo + ", maxVolumeSize=" + maxVolumeSize + ", createIfMissing=" + createIfMissing
        + ", placement=" + placement + ", smallThreshold=" + smallThreshold + ", largeThreshold="
        + largeThreshold + ", gcThresholdPercent=" + gcThresholdPercent + ", mediumMergeLevel="
        + mediumMergeLevel + ", memoryBudgetMiB=" + memoryBudgetMiB + ", sortLargeValues="
        + sortLargeValues + ", warmMiB=" + warmMiB + "}";
  }

  /** Builds {@link Options}; every setter validates its argument (InvalidArgumentException). */
  public static final class Builder {
    private Long l0Size;
    private Integer growthFactor;
    private Integer durabilityIntervalMs;
    private Integer compactionThreads;
    private Boolean useDirectIo;
    private Long maxVolumeSize;
    private Boolean createIfMissing;
    private Placement placement;
    private Integer smallThreshold;
    private Integer largeThreshold;
    private Integer gcThresholdPercent;
    private Integer mediumMergeLevel;
    private Integer memoryBudgetMiB;
    private Boolean sortLargeValues;
    private Integer warmMiB;

    private Builder() {}

    private static void require(boolean ok, String what) {
      if (!ok) throw new InvalidArgumentException(what);
    }

    /**
     * Bytes of one in-memory L0 (default 64 MiB, at least 64 KiB); a full L0 is compacted into
     * L1. This is the engine's main memory knob, and it applies <em>per region</em>: each open
     * region holds up to two L0s (one taking writes, one being compacted; writes stall when both
     * are full), plus older ones that its open snapshots and scanners still read. Reads of the
     * device levels go through the page cache (memory-mapped), which this does not bound. An L0
     * is also full once its entries point at 16 &times; this (at least 64 MiB) of large values,
     * so that the merge finds the overwritten ones for GC.
     */
    public Builder l0Size(long bytes) {
      require(bytes > 0, "l0Size must be positive");
      l0Size = bytes;
      return this;
    }

    /**
     * The memory budget of one open region's write path: sets {@link #l0Size} to half of it,
     * since a region holds up to two L0s (one taking writes, one being compacted). With several
     * regions open, give each its share. Not included: L0s that open snapshots and scanners keep
     * alive, the region's four 256 KiB log buffers, a running compaction's 2 MiB buffers, and the
     * page cache through which device levels and logs are read (bound that with a cgroup).
     *
     * @param bytes at least 128 KiB
     */
    public Builder memoryBudget(long bytes) {
      require(bytes >= 128 << 10, "memoryBudget must be at least 128 KiB");
      return l0Size(bytes / 2);
    }

    /** Size ratio of adjacent levels (default 8). */
    public Builder growthFactor(int factor) {
      require(factor >= 2, "growthFactor must be at least 2");
      growthFactor = factor;
      return this;
    }

    /** Writes without {@link WriteOptions#sync()} are durable within this (default 100 ms). */
    public Builder durabilityInterval(Duration interval) {
      Objects.requireNonNull(interval, "durabilityInterval");
      require(!interval.isNegative() && !interval.isZero() && interval.toMillis() <= Integer.MAX_VALUE,
          "durabilityInterval must be between 1 ms and 2^31 ms");
      durabilityIntervalMs = (int) Math.max(1, interval.toMillis());
      return this;
    }

    /** Background compaction workers of the volume (default 1). */
    public Builder compactionThreads(int threads) {
      require(threads >= 1, "compactionThreads must be at least 1");
      compactionThreads = threads;
      return this;
    }

    /** O_DIRECT for log and level writes (default true; the engine falls back if refused). */
    public Builder useDirectIo(boolean on) {
      useDirectIo = on;
      return this;
    }

    /** Bytes the volume file may grow to; 0 = the largest this version maps (512 GiB). */
    public Builder maxVolumeSize(long bytes) {
      require(bytes >= 0, "maxVolumeSize must not be negative");
      maxVolumeSize = bytes;
      return this;
    }

    /**
     * Create the volume file if it does not exist, or format it if it is empty (default true). A
     * file that is not empty but is not a volume is refused either way.
     */
    public Builder createIfMissing(boolean on) {
      createIfMissing = on;
      return this;
    }

    /** Value placement policy (default {@link Placement#HYBRID}). */
    public Builder placement(Placement p) {
      Objects.requireNonNull(p, "placement");
      placement = p;
      return this;
    }

    /** A pair (key + value bytes) is small below this (default 120). */
    public Builder smallThreshold(int bytes) {
      require(bytes > 0, "smallThreshold must be positive");
      smallThreshold = bytes;
      return this;
    }

    /** A pair (key + value bytes) is large from this on (default 1024). */
    public Builder largeThreshold(int bytes) {
      require(bytes > 0, "largeThreshold must be positive");
      largeThreshold = bytes;
      return this;
    }

    /**
     * Garbage share (percent) at which a large-log segment is collected (default 10). A region's
     * writers wait while such segments hold more garbage not yet collected than an eighth of the
     * large log (at least 64 MiB), so the volume stays bounded when writers outrun GC.
     */
    public Builder gcThresholdPercent(int percent) {
      require(percent >= 1 && percent <= 100, "gcThresholdPercent must be 1..100");
      gcThresholdPercent = percent;
      return this;
    }

    /** Where medium values merge into the leaves: 0 = last level (default), 1 = last but one. */
    public Builder mediumMergeLevel(int level) {
      require(level == 0 || level == 1, "mediumMergeLevel must be 0 or 1");
      mediumMergeLevel = level;
      return this;
    }

    /**
     * One memory budget, in MiB, for the L0s (in-memory write buffers) of all the regions of the
     * volume together, instead of up to 2 × {@link #l0Size} per region; 0 (default): none. While
     * it is reached, writers wait and the largest L0 is flushed (like RocksDB's
     * WriteBufferManager); the count exceeds it by at most one write's allocation per writing
     * thread. {@link VolumeStats#memoryUsed()} and {@link VolumeStats#memoryPeak()} report the
     * engine's count.
     */
    public Builder memoryBudgetMiB(int mib) {
      require(mib >= 0, "memoryBudgetMiB must not be negative");
      memoryBudgetMiB = mib;
      return this;
    }

    /**
     * Whether, with {@link Placement#HYBRID}, a merge into the last level copies the large values
     * it moves there into the large log in key order (default false), so that a scan reads them a
     * few to a page instead of a page or more each; each large value is written once more and
     * read back by the merge, which costs loads and updates more than scans gain unless the
     * workload is mostly scans (docs/benchmarks.md).
     */
    public Builder sortLargeValues(boolean sort) {
      sortLargeValues = sort;
      return this;
    }

    /**
     * MiB of the volume that regions read into the page cache, in the background, when they open:
     * first the pages of their trees and values that were in the page cache when the volume last
     * closed (a clean close records them in the file {@code <volume>.warm}, which the next open
     * reads and removes), then the rest of their B+-tree nodes, upper levels first. Shared by the
     * volume's regions in the order they open; 0: none. Unset (default): half of the memory the process can still
     * take when the volume opens (its memory cgroup's limit less its usage, or the machine's
     * available memory). After a restart the gets then find most leaves in memory instead of each
     * waiting for a random read; {@link RegionStats#warmBytesRead()} says how much was read.
     */
    public Builder warmMiB(int mib) {
      require(mib >= 0, "warmMiB must not be negative");
      warmMiB = mib;
      return this;
    }

    /** The options. */
    public Options build() {
      return new Options(this);
    }
  }
}
