package io.parallaxkv;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.ref.Reference;
import java.util.Objects;

/**
 * {@link MemorySegment} variants of the region, snapshot, batch and scanner operations (JDK 22+;
 * this type exists only in the jar's {@code META-INF/versions/22} layer, so compile against the
 * jar with JDK 22 or later to use it). Works with either backend.
 *
 * <p>A native segment is passed to the engine by address, without any copy; a heap segment is
 * copied once to native memory. A segment argument must stay alive (its arena open) for the
 * duration of the call; the engine keeps no reference to it afterwards.
 */
public final class ParallaxSegments {
  private ParallaxSegments() {}

  private static <T> T nonNull(T s, String what) {
    return Objects.requireNonNull(s, what);
  }

  /** Runs {@code body} with native copies of heap segments. */
  private interface Body<T> {
    T run(MemorySegment a, MemorySegment b);
  }

  private static <T> T withNative(MemorySegment a, MemorySegment b, Body<T> body) {
    boolean copyA = a != null && !a.isNative();
    boolean copyB = b != null && !b.isNative();
    if (!copyA && !copyB) return body.run(a, b);
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment na = copyA ? arena.allocate(Math.max(1, a.byteSize())).copyFrom(a) : a;
      MemorySegment nb = copyB ? arena.allocate(Math.max(1, b.byteSize())).copyFrom(b) : b;
      if (copyA) na = na.asSlice(0, a.byteSize());
      if (copyB) nb = nb.asSlice(0, b.byteSize());
      return body.run(na, nb);
    }
  }

  /** {@link Region#put(byte[], byte[], WriteOptions)} with segments. */
  public static void put(Region region, MemorySegment key, MemorySegment value, WriteOptions options) {
    nonNull(region, "region");
    nonNull(key, "key");
    nonNull(value, "value");
    withNative(key, value, (k, v) -> {
      region.putAddress(k.address(), k.byteSize(), v.address(), v.byteSize(), options);
      Reference.reachabilityFence(k);
      Reference.reachabilityFence(v);
      return null;
    });
  }

  /** {@link Region#put(byte[], byte[])} with segments. */
  public static void put(Region region, MemorySegment key, MemorySegment value) {
    put(region, key, value, WriteOptions.DEFAULT);
  }

  /** Deletes the key given by {@code key}. */
  public static void delete(Region region, MemorySegment key, WriteOptions options) {
    nonNull(region, "region");
    nonNull(key, "key");
    withNative(key, null, (k, unused) -> {
      region.deleteAddress(k.address(), k.byteSize(), options);
      Reference.reachabilityFence(k);
      return null;
    });
  }

  /**
   * Copies the value of {@code key} into {@code dst} (from offset 0). Returns the value's
   * length, or {@link Region#NOT_FOUND}; when the length is over {@code dst.byteSize()} only a
   * prefix was copied and the caller retries with a segment of at least that size.
   */
  public static long get(Region region, MemorySegment key, MemorySegment dst) {
    return get(region, null, key, dst);
  }

  /** Like {@link #get(Region, MemorySegment, MemorySegment)}, in a snapshot. */
  public static long get(Snapshot snapshot, MemorySegment key, MemorySegment dst) {
    nonNull(snapshot, "snapshot");
    return get(snapshot.region(), snapshot, key, dst);
  }

  private static long get(Region region, Snapshot snap, MemorySegment key, MemorySegment dst) {
    nonNull(region, "region");
    nonNull(key, "key");
    nonNull(dst, "destination");
    if (dst.isReadOnly()) throw new InvalidArgumentException("destination segment is read-only");
    if (dst.isNative()) {
      return withNative(key, null, (k, unused) -> {
        long n = region.getAddress(snap == null ? null : snap.state, k.address(), k.byteSize(),
            dst.address(), dst.byteSize());
        Reference.reachabilityFence(k);
        Reference.reachabilityFence(dst);
        return n;
      });
    }
    try (Arena arena = Arena.ofConfined()) {
      MemorySegment tmp = arena.allocate(Math.max(1, dst.byteSize()));
      long n = withNative(key, null, (k, unused) -> region.getAddress(
          snap == null ? null : snap.state, k.address(), k.byteSize(), tmp.address(), dst.byteSize()));
      if (n >= 0) MemorySegment.copy(tmp, 0, dst, 0, Math.min(n, dst.byteSize()));
      return n;
    }
  }

  /** True if {@code key} is present. */
  public static boolean exists(Region region, MemorySegment key) {
    nonNull(region, "region");
    nonNull(key, "key");
    return region.exists(key.asByteBuffer());
  }

  /** Adds a put to a batch. */
  public static void put(WriteBatch batch, MemorySegment key, MemorySegment value) {
    nonNull(batch, "batch");
    nonNull(key, "key");
    nonNull(value, "value");
    withNative(key, value, (k, v) -> {
      batch.putAddress(k.address(), k.byteSize(), v.address(), v.byteSize());
      Reference.reachabilityFence(k);
      Reference.reachabilityFence(v);
      return null;
    });
  }

  /** Adds a delete to a batch. */
  public static void delete(WriteBatch batch, MemorySegment key) {
    nonNull(batch, "batch");
    nonNull(key, "key");
    withNative(key, null, (k, unused) -> {
      batch.deleteAddress(k.address(), k.byteSize());
      Reference.reachabilityFence(k);
      return null;
    });
  }

  /**
   * The scanner's current key as a read-only segment, with the lifetime of
   * {@link Scanner#keyView()}: on the FFM backend the engine's memory, whose scope is confined to
   * the calling thread and closed when the scanner moves or closes (access then throws
   * {@link IllegalStateException}); on the JNI backend a copy the scanner reuses for later entries.
   */
  public static MemorySegment key(Scanner scanner) {
    return MemorySegment.ofBuffer(nonNull(scanner, "scanner").keyView());
  }

  /** Like {@link #key(Scanner)}, for the current value ({@link Scanner#valueView()}). */
  public static MemorySegment value(Scanner scanner) {
    return MemorySegment.ofBuffer(nonNull(scanner, "scanner").valueView());
  }
}
