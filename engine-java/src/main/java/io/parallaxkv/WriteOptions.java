package io.parallaxkv;

/**
 * Per-write options. By default a write is acknowledged once it is in the engine's log buffer
 * and becomes durable within {@link Options.Builder#durabilityInterval} (group commit); a
 * {@linkplain #sync() sync} write returns only once it is durable (fdatasync).
 */
public final class WriteOptions {
  /** Asynchronous durability (the default). */
  public static final WriteOptions DEFAULT = new WriteOptions(false);
  /** Wait until the write is durable. */
  public static final WriteOptions SYNC = new WriteOptions(true);

  private final boolean sync;

  private WriteOptions(boolean sync) {
    this.sync = sync;
  }

  /** {@link #SYNC}. */
  public static WriteOptions sync() {
    return SYNC;
  }

  /** {@link #SYNC} or {@link #DEFAULT}. */
  public static WriteOptions sync(boolean sync) {
    return sync ? SYNC : DEFAULT;
  }

  /** True if writes wait until durable. */
  public boolean isSync() {
    return sync;
  }

  int flags() {
    return sync ? 1 : 0;
  }

  @Override
  public String toString() {
    return sync ? "WriteOptions{sync}" : "WriteOptions{async}";
  }
}
