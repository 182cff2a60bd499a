package io.parallaxkv;

import io.parallaxkv.internal.EntryViews;
import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.Scratch;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;

/**
 * A forward iterator over a consistent snapshot of a {@link Region} (the region's state when the
 * scanner was opened, or a {@link Snapshot}'s), optionally limited to a range
 * ({@link ScanOptions}). Writes by other threads go on while it runs and are not seen.
 *
 * <pre>{@code
 * try (Scanner s = region.scanner(ScanOptions.builder().prefix(p).build())) {
 *   for (; s.isValid(); s.next()) {
 *     use(s.key(), s.value());
 *   }
 * }
 * }</pre>
 *
 * <h2>Positioning</h2>
 * A new scanner is on the first key of its range. {@link #seek(byte[])} moves to the first key
 * {@code >= key}, {@link #seekAfter(byte[])} to the first key {@code > key}, never before the
 * range; {@link #seekToFirst()} back to the start. {@link #isValid()} is false once the scanner
 * runs past the range.
 *
 * <h2>Reading the current entry; lifetimes</h2>
 * {@link #key()} and {@link #value()} return copies that the caller owns. {@link #key(ByteBuffer)}
 * and {@link #value(ByteBuffer)} copy straight from engine memory into a caller buffer.
 * {@link #keyView()} and {@link #valueView()} return read-only buffers that are <b>valid until the
 * scanner moves ({@link #next()}, a seek) or closes</b> — the lifetime the engine gives the
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
 * its scanners; their methods then throw {@link ParallaxClosedException}.
 */
public final class Scanner implements AutoCloseable {
  private static final int SEEK_FIRST = 0;
  private static final int SEEK_GE = 1;
  private static final int SEEK_GT = 2;

  final HandleState state;
  private final NativeApi api;
  /** The zero-copy views of the current entry (FFM), or null: the backend copies (JNI). */
  private final EntryViews views;
  private final byte[] lower;
  private final boolean lowerInclusive;
  private final byte[] upper;
  private final boolean upperInclusive;
  private final byte[] prefix;

  private boolean valid;
  private long keyAddr;
  private int keyLen;
  private long valueAddr;
  private int valueLen;
  private byte[] keyBuf; // the current key, for bound checks
  private ByteBuffer keyView; // JNI: the reused copies of keyView() and valueView()
  private ByteBuffer valueView;

  Scanner(Region region, long ptr, ScanOptions o) {
    NativeApi a = region.api;
    this.api = a;
    String kind = "Scanner of region '" + region.name() + "'";
    EntryViews v = EntryViews.create(a, kind);
    this.views = v;
    this.state = new HandleState(kind, ptr, region.state,
        p -> {
          if (v != null) v.awaitReleased(); // the engine frees the entry's memory below
          a.scannerClose(p);
          return 0;
        }, ParallaxClosedException::new, false, v == null ? null : v::releaseOwn);
    state.register(this);
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
    this.keyBuf = lower != null || upper != null || prefix != null ? new byte[Parallax.MAX_KEY_SIZE] : null;
  }

  /** Moves to the first key of the range; returns {@link #isValid()}. */
  public synchronized boolean seekToFirst() {
    if (lower == null) return move(SEEK_FIRST, null);
    return move(lowerInclusive ? SEEK_GE : SEEK_GT, ByteBuffer.wrap(lower));
  }

  /** Moves to the first key {@code >= key} (and in range); returns {@link #isValid()}. */
  public synchronized boolean seek(byte[] key) {
    Native.checkKey(key, "key");
    return seek(ByteBuffer.wrap(key), SEEK_GE);
  }

  /** Moves to the first key {@code >= } the remaining bytes of {@code key}. */
  public synchronized boolean seek(ByteBuffer key) {
    Native.checkKey(key, "key");
    return seek(key, SEEK_GE);
  }

  /** Moves to the first key {@code > key} (and in range); returns {@link #isValid()}. */
  public synchronized boolean seekAfter(byte[] key) {
    Native.checkKey(key, "key");
    return seek(ByteBuffer.wrap(key), SEEK_GT);
  }

  /** Moves to the first key {@code > } the remaining bytes of {@code key}. */
  public synchronized boolean seekAfter(ByteBuffer key) {
    Native.checkKey(key, "key");
    return seek(key, SEEK_GT);
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
    if (!valid) {
      state.acquire(); // a closed scanner must report it, even when exhausted
      state.release();
      return false;
    }
    return move(-1, null);
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
        if (mode < 0) {
          rc = api.scannerNext(s, entry);
        } else {
          rc = api.scannerSeek(s, key == null ? 0 : sc.address() + Scratch.DATA, kl, mode, entry);
        }
        valid = false;
        Native.check(api, rc);
        if (rc == 1) {
          keyAddr = sc.out(1);
          keyLen = (int) sc.out(2);
          valueAddr = sc.out(3);
          valueLen = (int) sc.out(4);
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
    if (upper != null) {
      int c = Arrays.compareUnsigned(keyBuf, 0, keyLen, upper, 0, upper.length);
      if (c > 0 || (c == 0 && !upperInclusive)) return false;
    }
    return true;
  }

  /** True while the scanner is on an entry of its range. */
  public synchronized boolean isValid() {
    state.acquire();
    state.release();
    return valid;
  }

  private void requireValid() {
    if (!valid) throw new InvalidArgumentException("the scanner is not on an entry");
  }

  /** Length of the current key. */
  public synchronized int keyLength() {
    state.acquire();
    state.release();
    requireValid();
    return keyLen;
  }

  /** Length of the current value. */
  public synchronized int valueLength() {
    state.acquire();
    state.release();
    requireValid();
    return valueLen;
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
    state.acquire();
    try {
      requireValid();
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
    Native.checkOut(dst);
    state.acquire();
    try {
      requireValid();
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
    state.acquire();
    try {
      requireValid();
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
