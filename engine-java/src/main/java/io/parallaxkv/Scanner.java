package io.parallaxkv;

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
 * {@link #keyView()} and {@link #valueView()} return read-only buffers owned by the scanner,
 * <b>valid until the scanner moves or closes</b>; after that their contents are unspecified
 * (they are reused for later entries) but reading them is always memory-safe.
 *
 * <h2>Threads</h2>
 * A scanner is meant for one thread at a time; its methods synchronize, so misuse from several
 * threads is safe but serialized. Closing the region (or volume) closes its scanners; their
 * methods then throw {@link ParallaxClosedException}.
 */
public final class Scanner implements AutoCloseable {
  private static final int SEEK_FIRST = 0;
  private static final int SEEK_GE = 1;
  private static final int SEEK_GT = 2;

  final HandleState state;
  private final NativeApi api;
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
  private ByteBuffer keyView;
  private ByteBuffer valueView;

  Scanner(Region region, long ptr, ScanOptions o) {
    NativeApi a = region.api;
    this.api = a;
    this.state = new HandleState("Scanner of region '" + region.name() + "'", ptr, region.state,
        p -> {
          a.scannerClose(p);
          return 0;
        }, ParallaxClosedException::new, false);
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
    long s = state.acquire();
    try {
      int kl = key == null ? 0 : key.remaining();
      Scratch sc = Scratch.get(key == null ? 0 : Native.heap(key));
      try {
        long entry = sc.address() + Scratch.OUT;
        int rc;
        if (mode < 0) {
          rc = api.scannerNext(s, entry);
        } else {
          long k = key == null ? 0 : Native.in(api, key, sc, 0);
          rc = api.scannerSeek(s, k, kl, mode, entry);
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
        sc.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
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
   * The current key as a read-only buffer owned by the scanner, valid until it moves or closes.
   */
  public synchronized ByteBuffer keyView() {
    return view(true);
  }

  /**
   * The current value as a read-only buffer owned by the scanner, valid until it moves or
   * closes.
   */
  public synchronized ByteBuffer valueView() {
    return view(false);
  }

  private ByteBuffer view(boolean key) {
    state.acquire();
    try {
      requireValid();
      int n = key ? keyLen : valueLen;
      ByteBuffer b = key ? keyView : valueView;
      if (b == null || b.capacity() < n) {
        b = ByteBuffer.allocateDirect(Math.max(n, 64)).order(ByteOrder.nativeOrder());
        if (key) keyView = b;
        else valueView = b;
      }
      api.copyMemory(key ? keyAddr : valueAddr, api.addressAtPosition(b.clear()), n);
      return b.slice(0, n).asReadOnlyBuffer();
    } finally {
      state.release();
    }
  }

  /** True until closed (directly or by closing the region). */
  public boolean isOpen() {
    return !state.isClosed();
  }

  /** Closes the scanner (waits for a call in flight). Idempotent. */
  @Override
  public void close() {
    state.close();
  }
}
