package io.parallaxkv;

import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.SnapshotViews;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Objects;

/**
 * A consistent, read-only view of a {@link Region} as of its creation: reads through it ignore
 * later writes, so several gets and scans see one state. Thread-safe. Holding a snapshot keeps
 * the engine from freeing the structures it reads (memory and disk space), so close it soon.
 * Closing the region closes its snapshots.
 */
public final class Snapshot implements AutoCloseable {
  final HandleState state;
  private final Region region;
  /** The {@link #getView} buffers of the FFM backend (null: the backend copies). */
  private final SnapshotViews views;

  Snapshot(Region region, long ptr) {
    var api = region.api;
    this.region = region;
    SnapshotViews v = SnapshotViews.create(api);
    this.views = v;
    String kind = "Snapshot of region '" + region.name() + "'";
    this.state = new HandleState(kind, ptr, region.state, p -> {
      if (v != null && !v.close()) {
        throw new BusyException(ParallaxException.EBUSY, kind + " is closed but not freed: a "
            + "call still reads one of its getView buffers (an I/O call or a downcall given it); "
            + "close it again once that call has ended");
      }
      api.snapshotRelease(p); // the views end above: none can read the memory freed here
      return null;
    }, Native.HANDLE_ERRORS, true);
    state.register(this);
  }

  /**
   * The value of {@code key} as a read-only buffer, or null if absent. On JDK 22+ (FFM backend)
   * the buffer is the engine's own memory — no copy — and it stays valid until this snapshot
   * closes; reading it afterwards throws {@link IllegalStateException}. On the JNI backend it is
   * a copy (a direct buffer's memory cannot be revoked), valid for as long as it is referenced.
   *
   * <p>A call that reads the buffer's memory directly (an NIO write of it to a channel, say)
   * delays closing the snapshot, its region or its volume: see {@link #close()}.
   */
  public ByteBuffer getView(byte[] key) {
    Native.checkKey(key, "key");
    return region.doGetView(state, ByteBuffer.wrap(key), views);
  }

  /** Like {@link #getView(byte[])} with the key given by the remaining bytes of {@code key}. */
  public ByteBuffer getView(ByteBuffer key) {
    return region.doGetView(state, key, views);
  }

  /** The region this snapshot reads. */
  public Region region() {
    return region;
  }

  /** Like {@link Region#multiGet}, in this snapshot. */
  public List<byte[]> multiGet(List<byte[]> keys) {
    Objects.requireNonNull(keys, "keys are null");
    long r = region.state.acquire();
    try {
      long sp = state.acquire();
      try {
        return region.multiGetIn(sp, keys);
      } finally {
        state.release();
      }
    } finally {
      region.state.release();
    }
  }

  /** Like {@link Region#multiGet(List, ByteBuffer, int[])}, in this snapshot. */
  public long multiGet(List<ByteBuffer> keys, ByteBuffer dst, int[] lengths) {
    Region.checkMultiGetInto(keys, dst, lengths);
    long r = region.state.acquire();
    try {
      long sp = state.acquire();
      try {
        return region.multiGetIntoIn(sp, keys, dst, lengths);
      } finally {
        state.release();
      }
    } finally {
      region.state.release();
    }
  }

  /** The value of {@code key} in this snapshot, or null. */
  public byte[] get(byte[] key) {
    return region.doGet(state, key);
  }

  /** The value of the remaining bytes of {@code key} in this snapshot, or null. */
  public byte[] get(ByteBuffer key) {
    return region.doGet(state, key);
  }

  /** Like {@link Region#get(ByteBuffer, ByteBuffer)}, in this snapshot. */
  public int get(ByteBuffer key, ByteBuffer dst) {
    return region.doGetInto(state, key, dst);
  }

  /** True if {@code key} is present in this snapshot. */
  public boolean exists(byte[] key) {
    Native.checkKey(key, "key");
    return region.doExists(state, ByteBuffer.wrap(key));
  }

  /** True if the remaining bytes of {@code key} are a key present in this snapshot. */
  public boolean exists(ByteBuffer key) {
    return region.doExists(state, key);
  }

  /** A scanner over this snapshot. */
  public Scanner scanner() {
    return region.openScanner(this, ScanOptions.ALL);
  }

  /** A scanner over this snapshot, limited to the range of {@code options}. */
  public Scanner scanner(ScanOptions options) {
    return region.openScanner(this, options);
  }

  /** True until closed. */
  public boolean isOpen() {
    return !state.isClosed();
  }

  /**
   * Releases the snapshot (waits for reads in flight). Scanners opened from it stay usable.
   * Idempotent once it has released the snapshot.
   *
   * <p>On the FFM backend a {@link #getView} buffer may be in use by a call that holds its memory
   * (an NIO read or write of the buffer, a downcall given it): the close waits for that call, for
   * up to {@code -Dparallax.viewCloseWaitMillis} milliseconds (10 000 by default). If the call has
   * not ended by then, releasing the snapshot would free the memory the call reads, so the
   * snapshot is closed to callers but not released: this method throws {@link BusyException},
   * and calling it again once the call has ended releases it. A region or volume close that
   * reaches such a snapshot does the same: it closes and frees everything else, keeps the
   * snapshot's region and volume allocated (their memory holds the views), and throws
   * {@link BusyException} with the snapshot's suppressed; closing the volume (or region) again
   * frees them.
   *
   * @throws BusyException if a call still holds a view at the end of the wait
   */
  @Override
  public void close() {
    state.close();
  }
}
