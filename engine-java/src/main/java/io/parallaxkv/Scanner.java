package io.parallaxkv;

import io.parallaxkv.internal.EntryViews;
import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.Scratch;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Objects;

/**
 * An iterator, forward and backward, over a consistent snapshot of a {@link Region} (the
 * region's state when the scanner was opened, or a {@link Snapshot}'s), optionally limited to a
 * range ({@link ScanOptions}). Writes by other threads go on while it runs and are not seen.
 *
 * <pre>{@code
 * try (Scanner s = region.scanner(ScanOptions.builder().prefix(p).build())) {
 *   for (; s.isValid(); s.next()) {
 *     use(s.key(), s.value());
 *   }
 *   for (s.seekToLast(); s.isValid(); s.prev()) {
 *     use(s.key()); // newest key first; values are read only when asked for
 *   }
 * }
 * }</pre>
 *
 * <h2>Positioning</h2>
 * A new scanner is on the first key of its range. {@link #seek(byte[])} moves to the first key
 * {@code >= key}, {@link #seekAfter(byte[])} to the first key {@code > key}, never before the
 * range; {@link #seekToFirst()} back to the start. Backwards, {@link #seekToLast()} moves to the
 * last key of the range and {@link #seekForPrev(byte[])} to the last key {@code <= key}, never
 * after the range. {@link #next()} and {@link #prev()} step to the next larger and smaller key
 * and may alternate freely (as RocksDB's iterator: {@code prev()} after {@code next()} returns to
 * the entry before). {@link #isValid()} is false once the scanner runs past either end of the
 * range; {@code next()} and {@code prev()} then do nothing until a seek.
 *
 * <p>Values are read lazily: a move reads only the key, and the value (perhaps from a value log
 * on the device, with its checksum) is read the first time {@link #value()},
 * {@link #valueLength()} or another value method asks for it, so key-only scans never read
 * values. Methods that need an entry throw {@link IllegalStateException} when the scanner is
 * not on one; null arguments throw {@link NullPointerException}.
 *
 * <h2>Reading the current entry; lifetimes</h2>
 * {@link #key()} and {@link #value()} return copies that the caller owns. {@link #key(ByteBuffer)}
 * and {@link #value(ByteBuffer)} copy straight from engine memory into a caller buffer.
 * {@link #keyView()} and {@link #valueView()} return read-only buffers that are <b>valid until the
 * scanner moves ({@link #next()}, {@link #prev()}, a seek) or closes</b> — the lifetime the engine gives the
 * memory of the current entry:
 * <ul>
 *   <li><b>FFM backend (JDK 22+)</b>: views of the engine's own memory, without a copy. Once the
 *       scanner moves or closes, reading them throws {@link IllegalStateException}; they never
 *       show freed memory. They are confined to the thread that took them: another thread gets
 *       {@code WrongThreadException} reading them, and {@link IllegalStateException} taking views
 *       of the same entry or moving the scanner while they are valid. Closing the scanner — or its
 *       region or volume — from another thread waits, like a call in flight, until the thread
 *       holding the views moves or closes the scanner, drops the views, or terminates (a warning
 *       naming it is logged every 10 s). A view costs ~60 ns (a confined arena per entry, and
 *       the view objects), more than copying a value the scanner has just brought into the cache
 *       ({@link #value(ByteBuffer)} copies 4 KB in ~20 ns): views pay off for values of tens of KB
 *       and more, or when only part of a value is read. {@code ParallaxSegments.key/value} return
 *       the same views as {@code MemorySegment}s.</li>
 *   <li><b>JNI backend</b>: copies, into buffers owned by the scanner and reused for later entries
 *       (JNI cannot revoke a direct buffer). After a move they hold another entry's bytes; reading
 *       them never throws and is memory-safe, but it is a bug. Code that follows the FFM rules is
 *       correct on both backends.</li>
 * </ul>
 *
 * <h2>Threads</h2>
 * A scanner is meant for one thread at a time; its methods synchronize, so misuse from several
 * threads is safe but serialized (views aside, see above). Closing the region (or volume) closes
 * its scanners; their methods then throw {@link ParallaxClosedException}. A scanner keeps its
 * region reachable: dropping every other reference to the region does not let the garbage
 * collector close it under the scanner.
 */
public final class Scanner implements AutoCloseable {
  private static final int SEEK_FIRST = 0;
  private static final int SEEK_GE = 1;
  private static final int SEEK_GT = 2;
  private static final int SEEK_LAST = 3;
  private static final int SEEK_LE = 4;
  private static final int SEEK_LT = 5;
  private static final int NEXT = -1;
  private static final int PREV = -2;

  final HandleState state;
  /** Keeps the region reachable: its Cleaner must not close it under a live scanner. */
  private final Region region;
  private final NativeApi api;
  /** The zero-copy views of the current entry (FFM), or null: the backend copies (JNI). */
  private final EntryViews views;
  private final byte[] lower;
  private final boolean lowerInclusive;
  private final byte[] upper;
  private final boolean upperInclusive;
  private final byte[] prefix;
  /** Where a reverse scan starts: the tighter of the upper bound and the prefix's end; or null. */
  private final byte[] last;
  private final boolean lastInclusive;

  private boolean valid;
  private long keyAddr;
  private int keyLen;
  private boolean valueRead; // valueAddr and valueLen hold the current entry's value
  private long valueAddr;
  private int valueLen;
  private byte[] keyBuf; // the current key, for bound checks
  private ByteBuffer keyView; // JNI: the reused copies of keyView() and valueView()
  private ByteBuffer valueView;

  Scanner(Region region, long ptr, ScanOptions o) {
    this.region = region;
    NativeApi a = region.api;
    this.api = a;
    String kind = "Scanner of region '" + region.name() + "'";
    EntryViews v = EntryViews.create(a, kind);
    this.views = v;
    this.state = new HandleState(kind, ptr, region.state,
        p -> {
          if (v != null) v.awaitReleased(); // the engine frees the entry's memory below
          a.scannerClose(p);
          return null;
        }, Native.HANDLE_ERRORS, false, v == null ? null : v::releaseOwn);
    state.register(this);
    if (o.readahead > 0) Native.check(a, a.scannerSetReadahead(ptr, o.readahead));
    byte[] lo = o.lower;
    boolean loInc = o.lowerInclusive;
    if (o.prefix != null
        && (lo == null || Arrays.compareUnsigned(o.prefix, lo) > 0)) {
      lo = o.prefix;
      loInc = true;
    }
    this.lower = lo;
    this.lowerInclusive = loInc;
    this.upper = o.upper;
    this.upperInclusive = o.upperInclusive;
    this.prefix = o.prefix;
    byte[] hi = o.upper;
    boolean hiInc = o.upperInclusive;
    byte[] end = o.prefix == null ? null : prefixEnd(o.prefix);
    if (end != null && (hi == null || Arrays.compareUnsigned(end, hi) <= 0)) {
      hi = end;
      hiInc = false;
    }
    this.last = hi;
    this.lastInclusive = hiInc;
    this.keyBuf = lower != null || upper != null || prefix != null ? new byte[Parallax.MAX_KEY_SIZE] : null;
  }

  /**
   * The smallest key greater than every key that starts with {@code p}, or null when there is
   * none (p is all 0xff bytes).
   */
  private static byte[] prefixEnd(byte[] p) {
    for (int i = p.length - 1; i >= 0; i--) {
      if (p[i] != (byte) 0xff) {
        byte[] e = Arrays.copyOf(p, i + 1);
        e[i]++;
        return e;
      }
    }
    return null;
  }

  /** Moves to the first key of the range; returns {@link #isValid()}. */
  public synchronized boolean seekToFirst() {
    if (lower == null) return move(SEEK_FIRST, null);
    return move(lowerInclusive ? SEEK_GE : SEEK_GT, ByteBuffer.wrap(lower));
  }

  /** Moves to the last key of the range; returns {@link #isValid()}. */
  public synchronized boolean seekToLast() {
    if (last == null) return move(SEEK_LAST, null);
    return move(lastInclusive ? SEEK_LE : SEEK_LT, ByteBuffer.wrap(last));
  }

  /** Moves to the first key {@code >= key} (and in range); returns {@link #isValid()}. */
  public synchronized boolean seek(byte[] key) {
    checkKey(key);
    return seek(ByteBuffer.wrap(key), SEEK_GE);
  }

  /** Moves to the first key {@code >= } the remaining bytes of {@code key}. */
  public synchronized boolean seek(ByteBuffer key) {
    checkKey(key);
    return seek(key, SEEK_GE);
  }

  /** Moves to the first key {@code > key} (and in range); returns {@link #isValid()}. */
  public synchronized boolean seekAfter(byte[] key) {
    checkKey(key);
    return seek(ByteBuffer.wrap(key), SEEK_GT);
  }

  /** Moves to the first key {@code > } the remaining bytes of {@code key}. */
  public synchronized boolean seekAfter(ByteBuffer key) {
    checkKey(key);
    return seek(key, SEEK_GT);
  }

  /**
   * Moves to the last key {@code <= key} (and in range), RocksDB's {@code SeekForPrev}; returns
   * {@link #isValid()}.
   */
  public synchronized boolean seekForPrev(byte[] key) {
    checkKey(key);
    return seekForPrev(ByteBuffer.wrap(key));
  }

  /** Moves to the last key {@code <= } the remaining bytes of {@code key}. */
  public synchronized boolean seekForPrev(ByteBuffer key) {
    checkKey(key);
    if (last != null) {
      int c = compare(key, last);
      if (c > 0 || (c == 0 && !lastInclusive)) return seekToLast();
    }
    return move(SEEK_LE, key);
  }

  private static void checkKey(byte[] key) {
    Native.checkKey(key, "key");
  }

  private static void checkKey(ByteBuffer key) {
    Native.checkKey(key, "key");
  }

  private boolean seek(ByteBuffer key, int mode) {
    if (lower != null) {
      int c = compare(key, lower);
      if (c < 0 || (c == 0 && !lowerInclusive && mode == SEEK_GE)) return seekToFirst();
    }
    return move(mode, key);
  }

  private static int compare(ByteBuffer a, byte[] b) {
    int n = Math.min(a.remaining(), b.length);
    int p = a.position();
    for (int i = 0; i < n; i++) {
      int c = Integer.compare(a.get(p + i) & 0xff, b[i] & 0xff);
      if (c != 0) return c;
    }
    return Integer.compare(a.remaining(), b.length);
  }

  /** Advances to the next key; returns {@link #isValid()}. */
  public synchronized boolean next() {
    return step(NEXT);
  }

  /** Steps back to the previous key; returns {@link #isValid()}. */
  public synchronized boolean prev() {
    return step(PREV);
  }

  private boolean step(int direction) {
    if (!valid) {
      state.acquire(); // a closed scanner must report it, even when exhausted
      state.release();
      return false;
    }
    return move(direction, null);
  }

  private boolean move(int mode, ByteBuffer key) {
    int kl = key == null ? 0 : key.remaining();
    Scratch sc = Scratch.get(kl);
    try {
      // Copied before the views end: the key may be one of them (seek(keyView())).
      if (key != null) sc.buffer().put(Scratch.DATA, key, key.position(), kl);
      if (views != null) views.release(); // the engine frees the entry's memory when it moves
      long s = state.acquire();
      try {
        long entry = sc.address() + Scratch.OUT;
        int rc;
        if (mode == NEXT) {
          rc = api.scannerNext(s, entry);
        } else if (mode == PREV) {
          rc = api.scannerPrev(s, entry);
        } else {
          rc = api.scannerSeek(s, key == null ? 0 : sc.address() + Scratch.DATA, kl, mode, entry);
        }
        valid = false;
        valueRead = false;
        Native.check(api, rc);
        if (rc == 1) {
          keyAddr = sc.out(1);
          keyLen = (int) sc.out(2);
          valid = inRange();
        }
        return valid;
      } finally {
        state.release();
      }
    } finally {
      sc.release();
    }
  }

  private boolean inRange() {
    if (keyBuf == null) return true;
    api.copyToArray(keyAddr, keyBuf, 0, keyLen);
    if (prefix != null) {
      if (keyLen < prefix.length
          || Arrays.mismatch(keyBuf, 0, prefix.length, prefix, 0, prefix.length) >= 0) {
        return false;
      }
    }
    if (lower != null) {
      int c = Arrays.compareUnsigned(keyBuf, 0, keyLen, lower, 0, lower.length);
      if (c < 0 || (c == 0 && !lowerInclusive)) return false;
    }
    if (upper != null) {
      int c = Arrays.compareUnsigned(keyBuf, 0, keyLen, upper, 0, upper.length);
      if (c > 0 || (c == 0 && !upperInclusive)) return false;
    }
    return true;
  }

  /** Reads the current value, once per entry (state acquired, on an entry). */
  private void readValue(long s) {
    if (valueRead) return;
    Scratch sc = Scratch.get(0);
    try {
      Native.check(api, api.scannerValue(s, sc.address() + Scratch.OUT));
      valueAddr = sc.out(0);
      valueLen = (int) sc.out(1);
      valueRead = true;
    } finally {
      sc.release();
    }
  }

  /** True while the scanner is on an entry of its range. */
  public synchronized boolean isValid() {
    state.acquire();
    state.release();
    return valid;
  }

  private void requireValid() {
    if (!valid) throw new IllegalStateException("the scanner is not on an entry");
  }

  /** Length of the current key. */
  public synchronized int keyLength() {
    state.acquire();
    state.release();
    requireValid();
    return keyLen;
  }

  /** Length of the current value (reads the value, see "Positioning"). */
  public synchronized int valueLength() {
    long s = state.acquire();
    try {
      requireValid();
      readValue(s);
      return valueLen;
    } finally {
      state.release();
    }
  }

  /** A copy of the current key. */
  public synchronized byte[] key() {
    return copy(true);
  }

  /** A copy of the current value. */
  public synchronized byte[] value() {
    return copy(false);
  }

  private byte[] copy(boolean key) {
    long s = state.acquire();
    try {
      requireValid();
      if (!key) readValue(s);
      byte[] b = new byte[key ? keyLen : valueLen];
      api.copyToArray(key ? keyAddr : valueAddr, b, 0, b.length);
      return b;
    } finally {
      state.release();
    }
  }

  /**
   * Copies the current key into {@code dst} at its position, if it fits (advancing the
   * position); returns the key's length either way.
   */
  public synchronized int key(ByteBuffer dst) {
    return copyInto(true, dst);
  }

  /** Like {@link #key(ByteBuffer)}, for the current value. */
  public synchronized int value(ByteBuffer dst) {
    return copyInto(false, dst);
  }

  private int copyInto(boolean key, ByteBuffer dst) {
    Native.checkOut(Objects.requireNonNull(dst, "dst"));
    long s = state.acquire();
    try {
      requireValid();
      if (!key) readValue(s);
      int n = key ? keyLen : valueLen;
      long src = key ? keyAddr : valueAddr;
      if (n <= dst.remaining()) {
        int pos = dst.position();
        if (dst.isDirect()) {
          api.copyMemory(src, api.addressAtPosition(dst), n);
        } else if (dst.hasArray()) {
          api.copyToArray(src, dst.array(), dst.arrayOffset() + pos, n);
        } else {
          byte[] tmp = new byte[n];
          api.copyToArray(src, tmp, 0, n);
          dst.put(pos, tmp);
        }
        dst.position(pos + n);
      }
      return n;
    } finally {
      state.release();
      Reference.reachabilityFence(dst);
    }
  }

  /**
   * The current key as a read-only buffer, valid until the scanner moves or closes: on FFM the
   * engine's memory itself, confined to the calling thread; on JNI a copy in a buffer the scanner
   * reuses. See "Reading the current entry; lifetimes" above.
   */
  public synchronized ByteBuffer keyView() {
    return view(true);
  }

  /** Like {@link #keyView()}, for the current value. */
  public synchronized ByteBuffer valueView() {
    return view(false);
  }

  private ByteBuffer view(boolean key) {
    long s = state.acquire();
    try {
      requireValid();
      if (!key) readValue(s);
      int n = key ? keyLen : valueLen;
      long addr = key ? keyAddr : valueAddr;
      if (views != null) return views.view(addr, n, this);
      ByteBuffer b = key ? keyView : valueView;
      if (b == null || b.capacity() < n) {
        b = ByteBuffer.allocateDirect(Math.max(n, 64)).order(ByteOrder.nativeOrder());
        if (key) keyView = b;
        else valueView = b;
      }
      api.copyMemory(addr, api.addressAtPosition(b.clear()), n);
      return b.slice(0, n).asReadOnlyBuffer();
    } finally {
      state.release();
    }
  }

  /** True until closed (directly or by closing the region). */
  public boolean isOpen() {
    return !state.isClosed();
  }

  /**
   * Closes the scanner (waits for a call in flight, and for views held by another thread; see
   * "Reading the current entry; lifetimes"). Idempotent.
   */
  @Override
  public void close() {
    state.close();
  }
}
