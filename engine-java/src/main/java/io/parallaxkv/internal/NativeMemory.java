package io.parallaxkv.internal;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** A block of native memory: its address and a native-order {@link ByteBuffer} over it. */
public class NativeMemory implements AutoCloseable {
  /** Address of the first byte. */
  public final long address;
  /** A buffer over the whole block (position 0, native order). */
  public final ByteBuffer buffer;
  private final Runnable free;

  public NativeMemory(long address, ByteBuffer buffer, Runnable free) {
    this.address = address;
    this.buffer = buffer.order(ByteOrder.nativeOrder());
    this.free = free;
  }

  /** Bytes in the block. */
  public int size() {
    return buffer.capacity();
  }

  /** Frees the block (no-op for memory owned by someone else). */
  @Override
  public void close() {
    if (free != null) free.run();
  }
}
