package io.parallaxkv;

import io.parallaxkv.internal.HandleState;
import java.nio.ByteBuffer;

/**
 * A consistent, read-only view of a {@link Region} as of its creation: reads through it ignore
 * later writes, so several gets and scans see one state. Thread-safe. Holding a snapshot keeps
 * the engine from freeing the structures it reads (memory and disk space), so close it soon.
 * Closing the region closes its snapshots.
 */
public final class Snapshot implements AutoCloseable {
  final HandleState state;
  private final Region region;

  Snapshot(Region region, long ptr) {
    var api = region.api;
    this.region = region;
    this.state = new HandleState("Snapshot of region '" + region.name() + "'", ptr, region.state,
        p -> {
          api.snapshotRelease(p);
          return 0;
        }, ParallaxClosedException::new, true);
    state.register(this);
  }

  /** The region this snapshot reads. */
  public Region region() {
    return region;
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

  /** Releases the snapshot (waits for reads in flight). Scanners opened from it stay usable. */
  @Override
  public void close() {
    state.close();
  }
}
