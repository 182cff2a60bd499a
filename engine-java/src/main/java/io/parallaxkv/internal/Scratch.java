package io.parallaxkv.internal;

import java.nio.ByteBuffer;

/**
 * Per-thread native memory for copying heap arguments (byte arrays, heap buffers) and receiving
 * out parameters. Layout: {@link #OUT} slots of 8 bytes at the start, then a data area. A call
 * takes the scratch with {@link #get(int)}, uses it, and never lets it escape: no engine call
 * re-enters Java, so one per thread is enough. Blocks over {@link #RETAIN} bytes are allocated
 * for the call and freed after it ({@link #release}).
 */
public final class Scratch {
  /** Offset of the out-parameter slots (8 × 8 bytes). */
  public static final int OUT = 0;
  /** Offset of the data area. */
  public static final int DATA = 64;
  /** Data bytes kept per thread between calls. */
  public static final int RETAIN = 64 * 1024;

  private static final ThreadLocal<Scratch> LOCAL = ThreadLocal.withInitial(Scratch::new);

  private NativeMemory mem;
  private NativeMemory temp;

  private Scratch() {
    mem = managed(DATA + 16 * 1024);
  }

  /** This thread's scratch with at least {@code dataBytes} in the data area. */
  public static Scratch get(int dataBytes) {
    Scratch s = LOCAL.get();
    s.reserve(dataBytes);
    return s;
  }

  private void reserve(int dataBytes) {
    if (temp != null) {
      temp.close();
      temp = null;
    }
    if (DATA + (long) dataBytes <= mem.size()) return;
    int want = DATA + dataBytes;
    if (dataBytes <= RETAIN) {
      mem = managed(Math.min(DATA + RETAIN, Math.max(want, 2 * mem.size())));
    } else {
      temp = Backend.api().allocate(want);
    }
  }

  /** Memory freed by the garbage collector (so a dying thread's scratch is not leaked). */
  private static NativeMemory managed(int size) {
    ByteBuffer b = ByteBuffer.allocateDirect(size);
    return new NativeMemory(Backend.api().addressAtPosition(b), b, null);
  }

  private NativeMemory m() {
    return temp != null ? temp : mem;
  }

  /** Address of the start (the out slots). */
  public long address() {
    return m().address;
  }

  /** A native-order buffer over the whole block; absolute access only. */
  public ByteBuffer buffer() {
    return m().buffer;
  }

  /** Bytes in the data area. */
  public int dataCapacity() {
    return m().size() - DATA;
  }

  /** Reads out slot {@code i}. */
  public long out(int i) {
    return m().buffer.getLong(OUT + 8 * i);
  }

  /** Frees a per-call block, if this call needed one. */
  public void release() {
    if (temp != null) {
      temp.close();
      temp = null;
    }
  }
}
