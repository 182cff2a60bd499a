package io.parallaxkv;

import java.util.Arrays;
import java.util.Objects;

/**
 * Range of a {@link Scanner}: optional lower and upper bounds (each inclusive or exclusive) and
 * an optional key prefix, and how many entries the caller reads after each seek, if it knows
 * ({@link Builder#readahead(int)}). Keys compare as unsigned bytes. Immutable; the builder copies
 * arrays.
 *
 * <pre>{@code
 * ScanOptions o = ScanOptions.builder().prefix("user:".getBytes(UTF_8)).build();
 * }</pre>
 */
public final class ScanOptions {
  /** The whole region. */
  public static final ScanOptions ALL = builder().build();

  final byte[] lower;
  final boolean lowerInclusive;
  final byte[] upper;
  final boolean upperInclusive;
  final byte[] prefix;
  final int readahead;

  private ScanOptions(Builder b) {
    lower = b.lower;
    lowerInclusive = b.lowerInclusive;
    upper = b.upper;
    upperInclusive = b.upperInclusive;
    prefix = b.prefix;
    readahead = b.readahead;
  }

  /** A builder for the whole region. */
  public static Builder builder() {
    return new Builder();
  }

  /** Builds {@link ScanOptions}. */
  public static final class Builder {
    private byte[] lower;
    private boolean lowerInclusive = true;
    private byte[] upper;
    private boolean upperInclusive;
    private byte[] prefix;
    private int readahead;

    private Builder() {}

    private static byte[] key(byte[] k) {
      Objects.requireNonNull(k, "bound is null");
      if (k.length == 0) throw new InvalidArgumentException("bound is empty");
      if (k.length > Parallax.MAX_KEY_SIZE) {
        throw new TooBigException("bound of " + k.length + " bytes is over the key limit");
      }
      return Arrays.copyOf(k, k.length);
    }

    /** Keys {@code >= key} (inclusive) or {@code > key}. */
    public Builder lowerBound(byte[] key, boolean inclusive) {
      lower = key(key);
      lowerInclusive = inclusive;
      return this;
    }

    /** Keys {@code >= key}. */
    public Builder lowerBound(byte[] key) {
      return lowerBound(key, true);
    }

    /** Keys {@code <= key} (inclusive) or {@code < key}. */
    public Builder upperBound(byte[] key, boolean inclusive) {
      upper = key(key);
      upperInclusive = inclusive;
      return this;
    }

    /** Keys {@code < key}. */
    public Builder upperBound(byte[] key) {
      return upperBound(key, false);
    }

    /** Keys that start with {@code prefix}. */
    public Builder prefix(byte[] prefix) {
      this.prefix = key(prefix);
      return this;
    }

    /**
     * Says that the caller reads about {@code entries} entries, values included, after each seek
     * (0, the default, says nothing; above 1024 counts as 1024). Only a hint: the scanner goes
     * as far as it is moved. When the region's data is not in memory, a seek then asks the
     * device for all their reads at once, so a scan waits for the device about twice instead of
     * once every few entries; with the data in memory it changes nothing.
     *
     * @throws InvalidArgumentException if entries is negative
     */
    public Builder readahead(int entries) {
      if (entries < 0) throw new InvalidArgumentException("readahead of " + entries + " entries");
      readahead = entries;
      return this;
    }

    /** The options. */
    public ScanOptions build() {
      return new ScanOptions(this);
    }
  }
}
