package io.parallaxkv.internal;

import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The zero-copy views of a snapshot's values (FFM backend): {@code par_snapshot_get_view} memory
 * is valid until the snapshot is released, so the views share one scope, readable from any
 * thread, that is closed before the snapshot is released; reading a view afterwards throws
 * instead of reading freed memory.
 *
 * <p>A call that reads a view without going through the buffer's accessors holds the scope while
 * it runs (an NIO read or write of the buffer, a downcall given its memory), and the scope cannot
 * be closed meanwhile. {@link #close()} waits for such calls, like a close waits for the calls in
 * flight on a handle, for up to {@code -Dparallax.viewCloseWaitMillis} (10 000 by default, read
 * at each close): a write of a view to a slow socket can take arbitrarily long, and a close must
 * not hang on it forever. When the wait ends first the snapshot must not be released, since the
 * call still reads its memory; the caller reports that and tries again later.
 */
public final class SnapshotViews {
  private static final long DEFAULT_WAIT_MILLIS = 10_000;

  private final NativeApi api;
  private final Object scope;

  private SnapshotViews(NativeApi api, Object scope) {
    this.api = api;
    this.scope = scope;
  }

  /** The views of a new snapshot, or null when the backend copies values instead (JNI). */
  public static SnapshotViews create(NativeApi api) {
    Object scope = api.openViewScope();
    return scope == null ? null : new SnapshotViews(api, scope);
  }

  /** A read-only view of {@code len} bytes of engine memory at {@code addr}. */
  public ByteBuffer view(long addr, int len) {
    return api.view(scope, addr, len);
  }

  /**
   * Ends the views, waiting for calls that hold them (see the class comment); idempotent.
   *
   * @return true once no view can be read any more; false if a call still held them at the
   *     end of the wait (the views stay readable)
   */
  public boolean close() {
    long wait = TimeUnit.MILLISECONDS.toNanos(
        Long.getLong("parallax.viewCloseWaitMillis", DEFAULT_WAIT_MILLIS));
    long start = System.nanoTime();
    for (int spins = 0; !api.tryCloseViewScope(scope); spins++) {
      if (System.nanoTime() - start >= wait) return false;
      if (spins < 100) Thread.onSpinWait();
      else LockSupport.parkNanos(spins < 1000 ? 10_000L : 1_000_000L);
    }
    return true;
  }
}
