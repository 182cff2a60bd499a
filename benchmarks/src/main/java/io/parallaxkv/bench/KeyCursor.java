package io.parallaxkv.bench;

import java.nio.ByteBuffer;
import java.util.concurrent.atomic.AtomicInteger;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;

/**
 * Per-thread state of the get/put/scan benchmarks, so that they run with any JMH thread count
 * ({@code -t 2}): each thread draws its own uniform key sequence (xorshift, seeded by thread)
 * and owns the direct buffers that RocksJava's {@code ByteBuffer} calls move (key, value) or
 * that the engines write into ({@code dst}).
 */
@State(Scope.Thread)
public class KeyCursor {
  private static final AtomicInteger SEEDS = new AtomicInteger();

  private int x;
  /** A direct buffer of {@link Workload#KEY_SIZE} bytes for a copy of the current key. */
  final ByteBuffer key = ByteBuffer.allocateDirect(Workload.KEY_SIZE);
  /** A direct buffer large enough for any value of the benchmarks. */
  final ByteBuffer dst = ByteBuffer.allocateDirect(8192);
  private ByteBuffer value;

  /** Seeds this thread's sequence. */
  @Setup
  public void setUp() {
    x = 0x9E3779B9 + 0x6C8E9CF5 * SEEDS.getAndIncrement();
    if (x == 0) x = 1;
  }

  /** A uniformly random index below {@code n}. */
  int next(int n) {
    int v = x;
    v ^= v << 13;
    v ^= v >>> 17;
    v ^= v << 5;
    x = v;
    return (int) (((v & 0xFFFFFFFFL) * n) >>> 32);
  }

  /** {@code k} copied into this thread's key buffer (position 0, limit its length). */
  ByteBuffer key(byte[] k) {
    key.clear();
    key.put(k).flip();
    return key;
  }

  /** A direct copy of {@code v} owned by this thread, rewound. */
  ByteBuffer value(byte[] v) {
    if (value == null || value.capacity() != v.length) {
      value = ByteBuffer.allocateDirect(v.length);
      value.put(v);
    }
    value.rewind();
    return value;
  }
}
