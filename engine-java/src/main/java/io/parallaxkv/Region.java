package io.parallaxkv;

import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.Layout;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.NativeMemory;
import io.parallaxkv.internal.Scratch;
import io.parallaxkv.internal.SnapshotViews;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.function.LongFunction;
import java.util.function.LongToIntFunction;

/**
 * An open region: an ordered key-value store inside a {@link Parallax} volume. Keys are 1..
 * {@link Parallax#MAX_KEY_SIZE} bytes and sort as unsigned bytes; values are 0..
 * {@link Parallax#MAX_VALUE_SIZE} bytes.
 *
 * <h2>Buffers</h2>
 * Every operation comes with {@code byte[]} and {@link ByteBuffer} arguments. A buffer argument
 * means the bytes between its position and limit; the position is not changed. Direct buffers
 * are passed to the engine by address (no copy on the Java side); heap buffers and arrays are
 * copied once into per-thread native scratch memory. The engine keeps no reference to caller
 * memory after a call returns. {@link #get(ByteBuffer, ByteBuffer)} writes into a caller buffer
 * and returns the value's length, or the size needed when it does not fit.
 *
 * <h2>Threads and lifecycle</h2>
 * All methods are thread-safe. {@link #close()} closes the region's scanners and snapshots,
 * waits for calls in flight, then closes the region; calls made after that (or after the volume
 * closes) throw {@link ParallaxClosedException}.
 */
public final class Region implements AutoCloseable {
  /** Returned by the {@code get} methods that write into a buffer when the key is absent. */
  public static final int NOT_FOUND = -1;

  private static final int PAR_NOT_FOUND = 1;
  private static final int GET_ROOM = 4096;

  final NativeApi api;
  final HandleState state;
  final Parallax volume;
  private final String name;

  Region(Parallax volume, String name, long ptr) {
    NativeApi a = volume.api;
    this.api = a;
    this.volume = volume;
    this.name = name;
    this.state = new HandleState("Region '" + name + "'", ptr, volume.state,
        p -> Native.closeError(a, a.regionClose(p)), Native.HANDLE_ERRORS, true);
    state.register(this);
  }

  /** The region's name. */
  public String name() {
    return name;
  }

  // ---- writes ------------------------------------------------------------------------------

  /** Stores {@code value} under {@code key} (asynchronous durability). */
  public void put(byte[] key, byte[] value) {
    put(key, value, WriteOptions.DEFAULT);
  }

  /** Stores {@code value} under {@code key}. */
  public void put(byte[] key, byte[] value, WriteOptions options) {
    int kl = Native.checkKey(key, "key");
    int vl = Native.checkValue(value);
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(Native.align(kl) + vl);
      try {
        long k = Native.in(key, s, 0);
        long v = Native.in(value, s, Native.align(kl));
        Native.check(api, api.put(r, k, kl, v, vl, flags));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** Stores the remaining bytes of {@code value} under the remaining bytes of {@code key}. */
  public void put(ByteBuffer key, ByteBuffer value) {
    put(key, value, WriteOptions.DEFAULT);
  }

  /**
   * Stores the remaining bytes of {@code value} under the remaining bytes of {@code key};
   * positions are unchanged.
   */
  public void put(ByteBuffer key, ByteBuffer value, WriteOptions options) {
    int kl = Native.checkKey(key, "key");
    int vl = Native.checkValue(value);
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      int kh = Native.align(Native.heap(key));
      Scratch s = Scratch.get(kh + Native.heap(value));
      try {
        long k = Native.in(api, key, s, 0);
        long v = Native.in(api, value, s, kh);
        Native.check(api, api.put(r, k, kl, v, vl, flags));
      } finally {
        s.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
      Reference.reachabilityFence(value);
    }
  }

  /** Raw-address put for the MemorySegment companion; the caller keeps the memory alive. */
  void putAddress(long k, long kl, long v, long vl, WriteOptions options) {
    Native.checkKeyLength(kl, "key");
    Native.checkValueLength(vl);
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      Native.check(api, api.put(r, k, kl, v, vl, flags));
    } finally {
      state.release();
    }
  }

  /** Deletes {@code key} (absent keys are fine). */
  public void delete(byte[] key) {
    delete(key, WriteOptions.DEFAULT);
  }

  /** Deletes {@code key} (absent keys are fine). */
  public void delete(byte[] key, WriteOptions options) {
    int kl = Native.checkKey(key, "key");
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(kl);
      try {
        Native.check(api, api.delete(r, Native.in(key, s, 0), kl, flags));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** Deletes the key given by the remaining bytes of {@code key}. */
  public void delete(ByteBuffer key) {
    delete(key, WriteOptions.DEFAULT);
  }

  /** Deletes the key given by the remaining bytes of {@code key}. */
  public void delete(ByteBuffer key, WriteOptions options) {
    int kl = Native.checkKey(key, "key");
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(Native.heap(key));
      try {
        Native.check(api, api.delete(r, Native.in(api, key, s, 0), kl, flags));
      } finally {
        s.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
    }
  }

  void deleteAddress(long k, long kl, WriteOptions options) {
    Native.checkKeyLength(kl, "key");
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      Native.check(api, api.delete(r, k, kl, flags));
    } finally {
      state.release();
    }
  }

  /** Deletes every key in [{@code begin}, {@code end}) (asynchronous durability). */
  public void deleteRange(byte[] begin, byte[] end) {
    deleteRange(begin, end, WriteOptions.DEFAULT);
  }

  /**
   * Deletes every key {@code k} with {@code begin <= k < end} (unsigned byte order) with one
   * write of a range tombstone, whatever the number of keys: it is logged and recovered like a
   * delete, and honoured by gets, multi-gets, scans in both directions and snapshots (a snapshot
   * taken before it still sees the keys; keys written after it are visible). Compactions drop
   * the covered entries (their large values become garbage for GC) and the tombstone once it
   * reaches the last level; until then each live tombstone costs reads a binary search per
   * level holding tombstones. {@code begin.equals(end)} deletes nothing. A region holds at most
   * 256 KiB of live range tombstones (4 bytes plus both bounds each): beyond that this throws
   * {@link LimitException} until {@link #compact()} has dropped them.
   *
   * @throws NullPointerException if a bound is null
   * @throws IllegalArgumentException if {@code begin} sorts after {@code end}
   * @throws InvalidArgumentException if a bound is empty
   * @throws TooBigException if a bound is longer than {@link Parallax#MAX_KEY_SIZE}
   */
  public void deleteRange(byte[] begin, byte[] end, WriteOptions options) {
    Native.checkRange(begin, end);
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(Native.align(begin.length) + end.length);
      try {
        Native.check(api, api.deleteRange(r, Native.in(begin, s, 0), begin.length,
            Native.in(end, s, Native.align(begin.length)), end.length, flags));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** Applies every operation of {@code batch} atomically, in order. */
  public void write(WriteBatch batch) {
    write(batch, WriteOptions.DEFAULT);
  }

  /**
   * Applies every operation of {@code batch} atomically, in order: after a crash either all of
   * them or none are present. The batch is unchanged (clear it to reuse it).
   */
  public void write(WriteBatch batch, WriteOptions options) {
    Objects.requireNonNull(batch, "batch is null");
    int flags = Native.opts(options).flags();
    long r = state.acquire();
    try {
      synchronized (batch) {
        long b = batch.state.acquire();
        try {
          Native.check(api, api.write(r, b, flags));
        } finally {
          batch.state.release();
        }
      }
    } finally {
      state.release();
    }
  }

  /** Runs a call on the region's handle (held open meanwhile) and throws its error, if any. */
  private void onRegion(LongToIntFunction call) {
    long r = state.acquire();
    try {
      Native.check(api, call.applyAsInt(r));
    } finally {
      state.release();
    }
  }

  /** Makes every write acknowledged so far durable. */
  public void sync() {
    onRegion(api::sync);
  }

  /** Freezes L0 and waits until it and every compaction it triggers is done. */
  public void flush() {
    onRegion(api::flush);
  }

  /**
   * {@link #flush()}, then merges every level into the last one and waits: medium values reach
   * the leaves (their transient log is freed), shadowed versions and tombstones are dropped and
   * their large values become garbage for GC. For a host's maintenance window; it rewrites the
   * whole region.
   */
  public void compact() {
    onRegion(api::compact);
  }

  /**
   * Compacts the region so that [{@code begin}, {@code end}) is fully compacted (a null bound is
   * unbounded). This engine's levels are each one B+-tree merged whole into the next (a tree
   * cannot be rewritten for part of its key range), so a key range cannot be compacted alone:
   * this is {@link #compact()} — the whole region is rewritten, which includes the range — and
   * the bounds are only checked. It drops the range's shadowed versions, tombstones and range
   * tombstones like {@code compact()} does.
   *
   * @throws IllegalArgumentException if both bounds are given and {@code begin} sorts after
   *     {@code end}
   */
  public void compactRange(byte[] begin, byte[] end) {
    if (begin != null && end != null && Arrays.compareUnsigned(begin, end) > 0) {
      throw new IllegalArgumentException("range to compact begins after its end");
    }
    compact();
  }

  // ---- reads -------------------------------------------------------------------------------

  /** The value of {@code key}, or null when absent. */
  public byte[] get(byte[] key) {
    return doGet(null, key);
  }

  /** The value of the key given by the remaining bytes of {@code key}, or null when absent. */
  public byte[] get(ByteBuffer key) {
    return doGet(null, key);
  }

  /**
   * Looks up the remaining bytes of {@code key} and copies the value into {@code dst} at its
   * position. Returns the value's length, or {@link #NOT_FOUND}. If the length is at most
   * {@code dst.remaining()}, the value is in {@code dst[position, position + length)} and the
   * position is advanced past it; otherwise the position is unchanged (the bytes after it may
   * have been overwritten) and the caller retries with a buffer of at least the returned size.
   */
  public int get(ByteBuffer key, ByteBuffer dst) {
    return doGetInto(null, key, dst);
  }

  /** Like {@link #get(ByteBuffer, ByteBuffer)} with an array key. */
  public int get(byte[] key, ByteBuffer dst) {
    return doGetInto(null, ByteBuffer.wrap(checkArrayKey(key)), dst);
  }

  /** True if {@code key} is present. */
  public boolean exists(byte[] key) {
    return doExists(null, ByteBuffer.wrap(checkArrayKey(key)));
  }

  /** True if the key given by the remaining bytes of {@code key} is present. */
  public boolean exists(ByteBuffer key) {
    return doExists(null, key);
  }

  private static byte[] checkArrayKey(byte[] key) {
    Native.checkKey(key, "key");
    return key;
  }

  /**
   * The values of many keys, read in one consistent state (one snapshot) with one call into the
   * engine, which sorts the keys and visits each level once: with 100 keys 1.8–2.8× cheaper
   * per key than {@link #get}, in L0 and on the device levels (docs/benchmarks.md). Element {@code i} of the result is the value of
   * {@code keys.get(i)}, or null when absent; keys may repeat and come in any order.
   */
  public List<byte[]> multiGet(List<byte[]> keys) {
    Objects.requireNonNull(keys, "keys are null");
    return inOwnSnapshot(snap -> multiGetIn(snap, keys));
  }

  /** Runs {@code read} in a snapshot of its own, taken now and released after. */
  private <T> T inOwnSnapshot(LongFunction<T> read) {
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(0);
      s.buffer().putLong(Scratch.OUT, 0);
      Native.check(api, api.snapshotCreate(r, s.address() + Scratch.OUT));
      long snap = s.out(0);
      try {
        return read.apply(snap);
      } finally {
        api.snapshotRelease(snap);
      }
    } finally {
      state.release();
    }
  }

  /**
   * {@link #multiGet(List)} with buffer keys, copying the values into {@code dst} instead of
   * allocating an array per value: direct key buffers are passed to the engine by address, and
   * each value is copied once, from the engine's snapshot straight into {@code dst}. The values
   * are written one after another from {@code dst}'s position, in the order of {@code keys};
   * {@code lengths[i]} receives the length of value {@code i}, or {@link #NOT_FOUND}. Returns the
   * bytes all the values take. If that is at most {@code dst.remaining()} the position is advanced
   * past them; otherwise the position is unchanged (the bytes after it may have been
   * overwritten), {@code lengths} is filled all the same, and the caller retries with a buffer of
   * at least the returned size.
   */
  public long multiGet(List<ByteBuffer> keys, ByteBuffer dst, int[] lengths) {
    checkMultiGetInto(keys, dst, lengths);
    return inOwnSnapshot(snap -> multiGetIntoIn(snap, keys, dst, lengths));
  }

  static void checkMultiGetInto(List<ByteBuffer> keys, ByteBuffer dst, int[] lengths) {
    Objects.requireNonNull(keys, "keys are null");
    Native.checkOut(dst);
    Objects.requireNonNull(lengths, "lengths is null");
    if (lengths.length < keys.size()) {
      throw new InvalidArgumentException("lengths holds " + lengths.length + " elements for "
          + keys.size() + " keys");
    }
  }

  /** {@link #multiGet(List)} in the snapshot at {@code snap} (whose handle the caller holds). */
  List<byte[]> multiGetIn(long snap, List<byte[]> keys) {
    return multiGetCall(snap, keys, (n, vp, vl) -> {
      List<byte[]> out = new ArrayList<>(n);
      for (int i = 0; i < n; i++) {
        long len = vl[i];
        if (len < 0) {
          out.add(null);
          continue;
        }
        byte[] v = new byte[(int) len];
        api.copyToArray(vp[i], v, 0, v.length);
        out.add(v);
      }
      return out;
    });
  }

  /** {@link #multiGet(List, ByteBuffer, int[])} in the snapshot at {@code snap}. */
  long multiGetIntoIn(long snap, List<ByteBuffer> keys, ByteBuffer dst, int[] lengths) {
    try {
      return multiGetCall(snap, keys, (n, vp, vl) -> {
        long total = 0;
        for (int i = 0; i < n; i++) {
          lengths[i] = vl[i] < 0 ? NOT_FOUND : (int) vl[i];
          if (vl[i] > 0) total += vl[i];
        }
        if (total > dst.remaining()) return total;
        long end = dst.position() + total;
        for (int i = 0; i < n; i++) {
          int len = (int) vl[i];
          if (len <= 0) continue;
          if (dst.isDirect()) api.copyMemory(vp[i], api.addressAtPosition(dst), len);
          else api.copyToArray(vp[i], dst.array(), dst.arrayOffset() + dst.position(), len);
          dst.position(dst.position() + len);
        }
        assert dst.position() == end;
        return total;
      });
    } finally {
      Reference.reachabilityFence(keys);
      Reference.reachabilityFence(dst);
    }
  }

  /** What a multiGet makes of the value addresses and lengths (-1: absent) of its n keys. */
  private interface MultiGetResults<T> {
    T read(int n, long[] valueAddresses, long[] valueLengths);
  }

  /**
   * One par_multi_get of {@code keys} (each a byte[] or a ByteBuffer) in the snapshot at
   * {@code snap}; the values stay valid while the snapshot does. Scratch: the keys' bytes (a
   * direct buffer's are passed by address), then key addresses, key lengths, value addresses,
   * value lengths (8 bytes each) and statuses (4 bytes each).
   */
  private <T> T multiGetCall(long snap, List<?> keys, MultiGetResults<T> results) {
    int n = keys.size();
    int bytes = 0;
    for (Object k : keys) {
      if (k instanceof ByteBuffer kb) {
        Native.checkKey(kb, "key");
        bytes += Native.align(Native.heap(kb));
      } else {
        bytes += Native.align(Native.checkKey((byte[]) k, "key"));
      }
    }
    Scratch s = Scratch.get(bytes + n * 36);
    try {
      ByteBuffer b = s.buffer();
      long base = s.address() + Scratch.DATA;
      int kp = bytes, kl = kp + 8 * n, vp = kl + 8 * n, vl = vp + 8 * n, st = vl + 8 * n;
      int off = 0;
      for (int i = 0; i < n; i++) {
        Object k = keys.get(i);
        if (k instanceof ByteBuffer kb) {
          b.putLong(Scratch.DATA + kp + 8 * i, Native.in(api, kb, s, off));
          b.putLong(Scratch.DATA + kl + 8 * i, kb.remaining());
          off += Native.align(Native.heap(kb));
        } else {
          byte[] ka = (byte[]) k;
          b.putLong(Scratch.DATA + kp + 8 * i, Native.in(ka, s, off));
          b.putLong(Scratch.DATA + kl + 8 * i, ka.length);
          off += Native.align(ka.length);
        }
      }
      Native.check(api, api.multiGet(snap, n, base + kp, base + kl, base + vp, base + vl,
          base + st));
      long[] addresses = new long[n];
      long[] lengths = new long[n];
      for (int i = 0; i < n; i++) {
        int rc = b.getInt(Scratch.DATA + st + 4 * i);
        if (rc < 0) {
          throw ParallaxException.of(rc, "multiGet key " + i + ": " + api.strerror(rc));
        }
        lengths[i] = rc == PAR_NOT_FOUND ? -1 : b.getLong(Scratch.DATA + vl + 8 * i);
        addresses[i] = b.getLong(Scratch.DATA + vp + 8 * i);
      }
      return results.read(n, addresses, lengths);
    } finally {
      s.release();
    }
  }

  /** A consistent read view of the region as of now; close it when done. */
  public Snapshot snapshot() {
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(0);
      s.buffer().putLong(Scratch.OUT, 0);
      Native.check(api, api.snapshotCreate(r, s.address() + Scratch.OUT));
      return new Snapshot(this, s.out(0));
    } finally {
      state.release();
    }
  }

  /** A scanner over the whole region, positioned on the first key. */
  public Scanner scanner() {
    return openScanner(null, ScanOptions.ALL);
  }

  /** A scanner over the range of {@code options}, positioned on its first key. */
  public Scanner scanner(ScanOptions options) {
    return openScanner(null, options);
  }

  /** Counters of the region. */
  public RegionStats stats() {
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(Layout.STRUCT_SLACK);
      try {
        Native.check(api, api.regionStats(r, s.address() + Scratch.DATA));
        ByteBuffer b = s.buffer();
        int o = Scratch.DATA;
        long[] c = new long[13];
        for (int i = 0; i < c.length; i++) c[i] = b.getLong(o + Layout.STATS_PUTS + 8 * i);
        int deepest = b.getInt(o + Layout.STATS_LEVELS);
        List<LevelStats> levels = new ArrayList<>(Parallax.MAX_LEVELS);
        for (int l = 1; l <= Parallax.MAX_LEVELS; l++) {
          int lo = o + Layout.STATS_LEVEL + l * Layout.LEVEL_STATS_SIZE;
          int classes = o + Layout.STATS_LEVEL_CLASS_BYTES + 8 * l;
          int perClass = 8 * (Parallax.MAX_LEVELS + 1);
          levels.add(new LevelStats(l, b.getLong(lo), b.getLong(lo + 8), b.getLong(lo + 16),
              b.getLong(lo + 24), b.getLong(lo + 32), b.getInt(lo + Layout.LEVEL_HEIGHT),
              b.getLong(classes), b.getLong(classes + perClass), b.getLong(classes + 2 * perClass)));
        }
        long[] q = new long[Layout.STATS_PLACEMENT_COUNTERS];
        for (int i = 0; i < q.length; i++) q[i] = b.getLong(o + Layout.STATS_SMALL_PUTS + 8 * i);
        RegionStats.Placement placement = new RegionStats.Placement(q[0], q[1], q[2], q[3], q[4],
            q[5], q[6], q[7], q[8], q[9], q[10], q[11], q[12], q[13], q[14],
            b.getLong(o + Layout.STATS_LOG_VALUE_READS),
            b.getLong(o + Layout.STATS_LOG_VALUE_READS + 8),
            b.getLong(o + Layout.STATS_LARGE_LOG_BYTES_SORTED));
        return new RegionStats(c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10],
            c[11], c[12], deepest, List.copyOf(levels), placement,
            b.getLong(o + Layout.STATS_ESTIMATED_KEYS),
            b.getLong(o + Layout.STATS_ESTIMATED_KEYS + 8),
            b.getLong(o + Layout.STATS_WARM_BYTES_READ));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /**
   * Estimates the entries and bytes with a key in {@code [begin, end)} without reading the
   * range: each L0 and level tree is descended to both bounds (a few nodes, usually cached) and
   * the range's share of the tree is taken from where the bounds' leaves lie. Exact for an empty
   * range and for one covering every key; on a region of uniformly spread keys within 25% for
   * ranges of a few percent of the keys or more (the tests see under 2%); where pair sizes differ
   * across the key space the error grows (a range of large inline pairs counts as more entries). Costs microseconds: fine per split decision, not per request.
   *
   * @param begin the first key of the range, or null for the region's first key
   * @param end   the key after the range, or null for past the last key
   * @throws InvalidArgumentException if a bound is empty or {@code begin} is after {@code end}
   * @throws TooBigException if a bound is longer than {@link Parallax#MAX_KEY_SIZE}
   */
  public RangeEstimate estimateRange(byte[] begin, byte[] end) {
    int bl = begin == null ? 0 : Native.checkKey(begin, "begin");
    int el = end == null ? 0 : Native.checkKey(end, "end");
    long r = state.acquire();
    try {
      Scratch s = Scratch.get(Native.align(bl) + Native.align(el) + Layout.STRUCT_SLACK);
      try {
        long b = begin == null ? 0 : Native.in(begin, s, 0);
        long e = end == null ? 0 : Native.in(end, s, Native.align(bl));
        int out = Native.align(bl) + Native.align(el);
        Native.check(api, api.estimateRange(r, b, bl, e, el, s.address() + Scratch.DATA + out));
        ByteBuffer buf = s.buffer();
        return new RangeEstimate(buf.getLong(Scratch.DATA + out),
            buf.getLong(Scratch.DATA + out + 8));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
  }

  /** True until {@link #close()} starts (or the volume closes). */
  public boolean isOpen() {
    return !state.isClosed();
  }

  /**
   * Closes the region's scanners and snapshots, waits for calls in flight and closes the
   * region. Every handle is closed even when closing one of them fails. Idempotent once the
   * region is freed. Every write is durable once the region is closed; a spill of a level into
   * the next that is less than half done stops, and the next open runs it again, so a close does
   * not wait for the rewrite of a large level.
   *
   * @throws ParallaxException the engine's error closing the region (it is closed and freed
   *     anyway), or, when only a scanner or snapshot failed, a {@code ParallaxException} naming
   *     them; the errors of the scanners and snapshots are suppressed in it
   * @throws BusyException if a snapshot could not be released yet, so the region is closed but
   *     not freed; closing again frees it (see {@link Snapshot#close()})
   */
  @Override
  public void close() {
    state.close();
  }

  @Override
  public String toString() {
    return "Region{" + name + (state.isClosed() ? ", closed" : "") + "}";
  }

  // ---- shared with Snapshot ----------------------------------------------------------------

  byte[] doGet(HandleState snap, byte[] key) {
    Native.checkKey(key, "key");
    return doGet(snap, ByteBuffer.wrap(key));
  }

  byte[] doGet(HandleState snap, ByteBuffer key) {
    int kl = Native.checkKey(key, "key");
    long r = state.acquire();
    try {
      long sp = snap == null ? 0 : snap.acquire();
      try {
        int kh = Native.align(Native.heap(key));
        Scratch s = Scratch.get(kh + GET_ROOM);
        try {
          long k = Native.in(api, key, s, 0);
          long out = s.address() + Scratch.DATA + kh;
          long cap = s.dataCapacity() - kh;
          long lenSlot = s.address() + Scratch.OUT;
          int rc = api.get(r, sp, k, kl, out, cap, lenSlot);
          if (rc == PAR_NOT_FOUND) return null;
          Native.check(api, rc);
          long vl = s.out(0);
          if (vl <= cap) {
            byte[] v = new byte[(int) vl];
            s.buffer().get(Scratch.DATA + kh, v);
            return v;
          }
          while (true) { // the value is larger than the scratch: read it into a block of its size
            try (NativeMemory m = api.allocate((int) vl)) {
              rc = api.get(r, sp, k, kl, m.address, vl, lenSlot);
              if (rc == PAR_NOT_FOUND) return null;
              Native.check(api, rc);
              long now = s.out(0);
              if (now <= vl) {
                byte[] v = new byte[(int) now];
                m.buffer.get(0, v);
                return v;
              }
              vl = now; // replaced by a larger value meanwhile
            }
          }
        } finally {
          s.release();
        }
      } finally {
        if (snap != null) snap.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
    }
  }

  int doGetInto(HandleState snap, ByteBuffer key, ByteBuffer dst) {
    int kl = Native.checkKey(key, "key");
    Native.checkOut(dst);
    long r = state.acquire();
    try {
      long sp = snap == null ? 0 : snap.acquire();
      try {
        int kh = Native.align(Native.heap(key));
        int room = dst.remaining();
        boolean direct = dst.isDirect();
        Scratch s = Scratch.get(kh + (direct ? 0 : room));
        try {
          long k = Native.in(api, key, s, 0);
          long out = direct ? api.addressAtPosition(dst) : s.address() + Scratch.DATA + kh;
          int rc = api.get(r, sp, k, kl, out, room, s.address() + Scratch.OUT);
          if (rc == PAR_NOT_FOUND) return NOT_FOUND;
          Native.check(api, rc);
          long vl = s.out(0);
          if (vl <= room) {
            int pos = dst.position();
            if (!direct) dst.put(pos, s.buffer(), Scratch.DATA + kh, (int) vl);
            dst.position(pos + (int) vl);
          }
          return (int) vl;
        } finally {
          s.release();
        }
      } finally {
        if (snap != null) snap.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
      Reference.reachabilityFence(dst);
    }
  }

  /** A view of the value through {@code snap}; see {@link Snapshot#getView(byte[])}. */
  ByteBuffer doGetView(HandleState snap, ByteBuffer key, SnapshotViews views) {
    int kl = Native.checkKey(key, "key");
    long r = state.acquire();
    try {
      long sp = snap.acquire();
      try {
        Scratch s = Scratch.get(Native.align(Native.heap(key)));
        try {
          long k = Native.in(api, key, s, 0);
          int rc = api.snapshotGetView(sp, k, kl, s.address() + Scratch.OUT, s.address() + Scratch.OUT + 8);
          if (rc == PAR_NOT_FOUND) return null;
          Native.check(api, rc);
          long addr = s.out(0);
          int len = (int) s.out(1);
          if (views != null) return views.view(addr, len);
          ByteBuffer copy = ByteBuffer.allocateDirect(len);
          if (len > 0) api.copyMemory(addr, api.addressAtPosition(copy), len);
          return copy.asReadOnlyBuffer();
        } finally {
          s.release();
        }
      } finally {
        snap.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
    }
  }

  /** Raw-address get for the MemorySegment companion: value length or NOT_FOUND. */
  long getAddress(HandleState snap, long k, long kl, long out, long cap) {
    Native.checkKeyLength(kl, "key");
    long r = state.acquire();
    try {
      long sp = snap == null ? 0 : snap.acquire();
      try {
        Scratch s = Scratch.get(0);
        int rc = api.get(r, sp, k, kl, out, cap, s.address() + Scratch.OUT);
        if (rc == PAR_NOT_FOUND) return NOT_FOUND;
        Native.check(api, rc);
        return s.out(0);
      } finally {
        if (snap != null) snap.release();
      }
    } finally {
      state.release();
    }
  }

  boolean doExists(HandleState snap, ByteBuffer key) {
    int kl = Native.checkKey(key, "key");
    long r = state.acquire();
    try {
      long sp = snap == null ? 0 : snap.acquire();
      try {
        Scratch s = Scratch.get(Native.heap(key));
        try {
          int rc = api.exists(r, sp, Native.in(api, key, s, 0), kl);
          if (rc == PAR_NOT_FOUND) return false;
          Native.check(api, rc);
          return true;
        } finally {
          s.release();
        }
      } finally {
        if (snap != null) snap.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
    }
  }

  Scanner openScanner(Snapshot snapshot, ScanOptions options) {
    Objects.requireNonNull(options, "scan options are null");
    long r = state.acquire();
    try {
      HandleState snap = snapshot == null ? null : snapshot.state;
      long sp = snap == null ? 0 : snap.acquire();
      try {
        Scratch s = Scratch.get(0);
        s.buffer().putLong(Scratch.OUT, 0);
        Native.check(api, api.scannerOpen(r, sp, s.address() + Scratch.OUT));
        Scanner sc = new Scanner(this, s.out(0), options);
        try {
          sc.seekToFirst();
        } catch (RuntimeException e) {
          sc.close();
          throw e;
        }
        return sc;
      } finally {
        if (snap != null) snap.release();
      }
    } finally {
      state.release();
    }
  }
}
