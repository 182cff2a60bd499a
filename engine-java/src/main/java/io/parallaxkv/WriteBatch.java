package io.parallaxkv;

import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.Scratch;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * Puts, deletes and range deletes applied atomically and in order by {@link
 * Region#write(WriteBatch)}. The
 * batch copies every key and value when they are added, so buffers can be reused at once. The
 * encoded batch is limited to {@link Parallax#MAX_BATCH_SIZE} bytes ({@link TooBigException}).
 * Not tied to a region: one batch can be written to several regions. Its methods synchronize,
 * so sharing one between threads is safe (if rarely useful).
 *
 * <p>Ops added with {@link #put(Region, byte[], byte[])}, {@link #delete(Region, byte[])} and
 * {@link #deleteRange(Region, byte[], byte[])} name their region: such a batch spans regions of one volume and is written with {@link
 * Parallax#write(WriteBatch)}, which applies it all-or-nothing across the regions, also across a
 * crash. The regions must stay open until then. {@link Region#write(WriteBatch)} refuses a batch
 * naming another region ({@link InvalidArgumentException}).
 */
public final class WriteBatch implements AutoCloseable {
  final HandleState state;
  private final NativeApi api;
  /** Regions named by ops (identity): kept open by {@link Parallax#write} while it writes. */
  private final Map<Region, Boolean> regions = new IdentityHashMap<>();

  /** An empty batch; close it when done (it holds native memory). */
  public WriteBatch() {
    NativeApi a = Native.api();
    this.api = a;
    Scratch s = Scratch.get(0);
    s.buffer().putLong(Scratch.OUT, 0);
    Native.check(a, a.batchCreate(s.address() + Scratch.OUT));
    this.state = new HandleState("WriteBatch", s.out(0), null, p -> {
      a.batchDestroy(p);
      return null;
    }, Native.HANDLE_ERRORS, false);
    state.register(this);
  }

  /** Adds a put. */
  public synchronized WriteBatch put(byte[] key, byte[] value) {
    int kl = Native.checkKey(key, "key");
    int vl = Native.checkValue(value);
    long b = state.acquire();
    try {
      Scratch s = Scratch.get(Native.align(kl) + vl);
      try {
        Native.check(api, api.batchPut(b, Native.in(key, s, 0), kl,
            Native.in(value, s, Native.align(kl)), vl));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
    return this;
  }

  /** Adds a put of the remaining bytes of both buffers (positions unchanged). */
  public synchronized WriteBatch put(ByteBuffer key, ByteBuffer value) {
    int kl = Native.checkKey(key, "key");
    int vl = Native.checkValue(value);
    long b = state.acquire();
    try {
      int kh = Native.align(Native.heap(key));
      Scratch s = Scratch.get(kh + Native.heap(value));
      try {
        Native.check(api, api.batchPut(b, Native.in(api, key, s, 0), kl,
            Native.in(api, value, s, kh), vl));
      } finally {
        s.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
      Reference.reachabilityFence(value);
    }
    return this;
  }

  synchronized void putAddress(long k, long kl, long v, long vl) {
    Native.checkKeyLength(kl, "key");
    Native.checkValueLength(vl);
    long b = state.acquire();
    try {
      Native.check(api, api.batchPut(b, k, kl, v, vl));
    } finally {
      state.release();
    }
  }

  /** Adds a put for {@code region} (a batch across regions: {@link Parallax#write(WriteBatch)}). */
  public synchronized WriteBatch put(Region region, byte[] key, byte[] value) {
    Objects.requireNonNull(region, "region");
    int kl = Native.checkKey(key, "key");
    int vl = Native.checkValue(value);
    long b = state.acquire();
    try {
      long r = region.state.acquire();
      try {
        Scratch s = Scratch.get(Native.align(kl) + vl);
        try {
          Native.check(api, api.batchPutIn(b, r, Native.in(key, s, 0), kl,
              Native.in(value, s, Native.align(kl)), vl));
        } finally {
          s.release();
        }
      } finally {
        region.state.release();
      }
      regions.put(region, Boolean.TRUE);
    } finally {
      state.release();
    }
    return this;
  }

  /** Adds a delete for {@code region} (a batch across regions). */
  public synchronized WriteBatch delete(Region region, byte[] key) {
    Objects.requireNonNull(region, "region");
    int kl = Native.checkKey(key, "key");
    long b = state.acquire();
    try {
      long r = region.state.acquire();
      try {
        Scratch s = Scratch.get(kl);
        try {
          Native.check(api, api.batchDeleteIn(b, r, Native.in(key, s, 0), kl));
        } finally {
          s.release();
        }
      } finally {
        region.state.release();
      }
      regions.put(region, Boolean.TRUE);
    } finally {
      state.release();
    }
    return this;
  }

  /**
   * Adds a range delete of [{@code begin}, {@code end}) for {@code region} (a batch across
   * regions); the checks and the meaning are those of {@link Region#deleteRange(byte[], byte[],
   * WriteOptions)}.
   */
  public synchronized WriteBatch deleteRange(Region region, byte[] begin, byte[] end) {
    Objects.requireNonNull(region, "region");
    Native.checkRange(begin, end);
    long b = state.acquire();
    try {
      long r = region.state.acquire();
      try {
        Scratch s = Scratch.get(Native.align(begin.length) + end.length);
        try {
          Native.check(api, api.batchDeleteRangeIn(b, r, Native.in(begin, s, 0), begin.length,
              Native.in(end, s, Native.align(begin.length)), end.length));
        } finally {
          s.release();
        }
      } finally {
        region.state.release();
      }
      regions.put(region, Boolean.TRUE);
    } finally {
      state.release();
    }
    return this;
  }

  /**
   * Adds a range delete of [{@code begin}, {@code end}): ops after it in the batch (a put of a
   * key in the range, say) apply after it. Checks and meaning as {@link
   * Region#deleteRange(byte[], byte[], WriteOptions)}.
   */
  public synchronized WriteBatch deleteRange(byte[] begin, byte[] end) {
    Native.checkRange(begin, end);
    long b = state.acquire();
    try {
      Scratch s = Scratch.get(Native.align(begin.length) + end.length);
      try {
        Native.check(api, api.batchDeleteRange(b, Native.in(begin, s, 0), begin.length,
            Native.in(end, s, Native.align(begin.length)), end.length));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
    return this;
  }

  /** The regions ops were added for, each once. */
  synchronized List<Region> regions() {
    return new ArrayList<>(regions.keySet());
  }

  /** Adds a delete. */
  public synchronized WriteBatch delete(byte[] key) {
    int kl = Native.checkKey(key, "key");
    long b = state.acquire();
    try {
      Scratch s = Scratch.get(kl);
      try {
        Native.check(api, api.batchDelete(b, Native.in(key, s, 0), kl));
      } finally {
        s.release();
      }
    } finally {
      state.release();
    }
    return this;
  }

  /** Adds a delete of the key given by the remaining bytes of {@code key}. */
  public synchronized WriteBatch delete(ByteBuffer key) {
    int kl = Native.checkKey(key, "key");
    long b = state.acquire();
    try {
      Scratch s = Scratch.get(Native.heap(key));
      try {
        Native.check(api, api.batchDelete(b, Native.in(api, key, s, 0), kl));
      } finally {
        s.release();
      }
    } finally {
      state.release();
      Reference.reachabilityFence(key);
    }
    return this;
  }

  synchronized void deleteAddress(long k, long kl) {
    Native.checkKeyLength(kl, "key");
    long b = state.acquire();
    try {
      Native.check(api, api.batchDelete(b, k, kl));
    } finally {
      state.release();
    }
  }

  /** Operations in the batch. */
  public synchronized int count() {
    long b = state.acquire();
    try {
      return (int) api.batchCount(b);
    } finally {
      state.release();
    }
  }

  /** Removes every operation, keeping the memory for reuse. */
  public synchronized void clear() {
    long b = state.acquire();
    try {
      api.batchClear(b);
      regions.clear();
    } finally {
      state.release();
    }
  }

  /** Frees the batch. Idempotent. */
  @Override
  public void close() {
    state.close();
  }
}
