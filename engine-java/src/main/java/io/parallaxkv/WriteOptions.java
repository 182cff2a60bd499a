package io.parallaxkv;

/**
 * Per-write options. By default a write is acknowledged once it is in the engine's log buffer
 * and becomes durable within {@link Options.Builder#durabilityInterval} (group commit); a
 * {@linkplain #sync() sync} write returns only once it is durable (fdatasync).
 *
 * <p>A write with the {@linkplain #disableWal(boolean) WAL disabled} is not logged at all, for
 * hosts that keep their own log (Kafka Streams changelogs, Flink checkpoints). It is visible at
 * once, but durable only once its in-memory level is flushed: by {@link Region#flush()} or
 * {@link Region#compact()}, by the engine when that level fills up, or by closing the region or
 * the volume (which flush unlogged writes). After a crash the region holds every unlogged write
 * made before the last completed {@link Region#flush()}, possibly some later ones, and every
 * logged write as usual (all synced ones and a prefix of the others) — including logged writes
 * made after an unlogged write that was lost. A write cannot be both synced and unlogged.
 */
public final class WriteOptions {
  /** Asynchronous durability (the default). */
  public static final WriteOptions DEFAULT = new WriteOptions(false, false);
  /** Wait until the write is durable. */
  public static final WriteOptions SYNC = new WriteOptions(true, false);
  /** Do not log the write: durable at the next flush (see the class comment). */
  public static final WriteOptions NO_WAL = new WriteOptions(false, true);

  private static final int PAR_SYNC = 1;
  private static final int PAR_NO_WAL = 2;

  private final boolean sync;
  private final boolean disableWal;

  private WriteOptions(boolean sync, boolean disableWal) {
    this.sync = sync;
    this.disableWal = disableWal;
  }

  /** {@link #SYNC}. */
  public static WriteOptions sync() {
    return SYNC;
  }

  /** {@link #SYNC} or {@link #DEFAULT}. */
  public static WriteOptions sync(boolean sync) {
    return sync ? SYNC : DEFAULT;
  }

  /** {@link #NO_WAL} or {@link #DEFAULT}. */
  public static WriteOptions disableWal(boolean disable) {
    return disable ? NO_WAL : DEFAULT;
  }

  /** True if writes wait until durable. */
  public boolean isSync() {
    return sync;
  }

  /** True if writes skip the write-ahead log. */
  public boolean isWalDisabled() {
    return disableWal;
  }

  int flags() {
    return (sync ? PAR_SYNC : 0) | (disableWal ? PAR_NO_WAL : 0);
  }

  @Override
  public String toString() {
    return sync ? "WriteOptions{sync}" : disableWal ? "WriteOptions{noWal}" : "WriteOptions{async}";
  }
}
