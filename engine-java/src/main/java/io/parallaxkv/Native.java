package io.parallaxkv;

import io.parallaxkv.internal.Backend;
import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.Scratch;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;

/** Shared glue of the public classes: backend access, status checks, argument checks. */
final class Native {
  private Native() {}

  static NativeApi api() {
    try {
      return Backend.api();
    } catch (IllegalStateException e) {
      throw new NativeLibraryException(e.getMessage(), e.getCause() != null ? e.getCause() : e);
    }
  }

  /** The exceptions {@link HandleState} throws. */
  static final HandleState.Errors HANDLE_ERRORS = new HandleState.Errors() {
    @Override
    public RuntimeException closed(String message) {
      return new ParallaxClosedException(message);
    }

    @Override
    public RuntimeException busy(String message) {
      return new BusyException(ParallaxException.EBUSY, message);
    }

    @Override
    public RuntimeException failed(String message, RuntimeException first) {
      return ParallaxException.of(first instanceof ParallaxException p ? p.status() : 0, message);
    }
  };

  /** The error of a native close's status, or null for success (for {@link HandleState}). */
  static ParallaxException closeError(NativeApi api, int rc) {
    return rc < 0 ? error(api, rc) : null;
  }

  /** Throws the exception for a negative status. */
  static void check(NativeApi api, int rc) {
    if (rc < 0) throw error(api, rc);
  }

  static ParallaxException error(NativeApi api, int rc) {
    String detail = api.lastError();
    String name = api.strerror(rc);
    String msg = detail == null || detail.isEmpty() ? name : detail + " (" + name + ")";
    return ParallaxException.of(rc, msg);
  }

  static int checkKey(byte[] key, String what) {
    Objects.requireNonNull(key, what + " is null");
    return checkKeyLength(key.length, what);
  }

  static int checkKey(ByteBuffer key, String what) {
    Objects.requireNonNull(key, what + " is null");
    return checkKeyLength(key.remaining(), what);
  }

  static int checkKeyLength(long n, String what) {
    if (n <= 0) throw new InvalidArgumentException(what + " is empty");
    if (n > Parallax.MAX_KEY_SIZE) {
      throw new TooBigException(what + " of " + n + " bytes is over the limit of "
          + Parallax.MAX_KEY_SIZE);
    }
    return (int) n;
  }

  /**
   * Checks the bounds of a range delete: non-null ({@link NullPointerException}), keys
   * (empty: {@link InvalidArgumentException}, too long: {@link TooBigException}), and
   * {@code begin <= end} in unsigned byte order ({@link IllegalArgumentException}).
   */
  static void checkRange(byte[] begin, byte[] end) {
    Objects.requireNonNull(begin, "begin");
    Objects.requireNonNull(end, "end");
    checkKey(begin, "begin");
    checkKey(end, "end");
    if (Arrays.compareUnsigned(begin, end) > 0) {
      throw new IllegalArgumentException("range to delete begins after its end");
    }
  }

  static int checkValue(byte[] value) {
    Objects.requireNonNull(value, "value is null");
    return checkValueLength(value.length);
  }

  static int checkValue(ByteBuffer value) {
    Objects.requireNonNull(value, "value is null");
    return checkValueLength(value.remaining());
  }

  static int checkValueLength(long n) {
    if (n > Parallax.MAX_VALUE_SIZE) {
      throw new TooBigException("value of " + n + " bytes is over the limit of "
          + Parallax.MAX_VALUE_SIZE);
    }
    return (int) n;
  }

  static WriteOptions opts(WriteOptions o) {
    Objects.requireNonNull(o, "write options are null");
    return o;
  }

  static void checkOut(ByteBuffer dst) {
    Objects.requireNonNull(dst, "destination buffer is null");
    if (dst.isReadOnly()) throw new InvalidArgumentException("destination buffer is read-only");
  }

  /** Heap bytes a buffer argument needs in the scratch area (0 for a direct buffer). */
  static int heap(ByteBuffer b) {
    return b.isDirect() ? 0 : b.remaining();
  }

  /** Rounds a scratch offset up to 8. */
  static int align(int n) {
    return (n + 7) & ~7;
  }

  /**
   * The native address of a buffer argument: a direct buffer's own memory, or a copy of a heap
   * buffer's remaining bytes at scratch data offset {@code off}.
   */
  static long in(NativeApi api, ByteBuffer b, Scratch s, int off) {
    if (b.isDirect()) return api.addressAtPosition(b);
    s.buffer().put(Scratch.DATA + off, b, b.position(), b.remaining());
    return s.address() + Scratch.DATA + off;
  }

  /** Copies an array to scratch data offset {@code off}; returns its address. */
  static long in(byte[] a, Scratch s, int off) {
    s.buffer().put(Scratch.DATA + off, a);
    return s.address() + Scratch.DATA + off;
  }

  /** Region name bytes with their terminating NUL, validated. */
  static byte[] name(String name) {
    Objects.requireNonNull(name, "region name is null");
    byte[] b = name.getBytes(StandardCharsets.UTF_8);
    if (b.length == 0) throw new InvalidArgumentException("region name is empty");
    if (b.length > Parallax.MAX_REGION_NAME) {
      throw new TooBigException("region name of " + b.length + " bytes is over the limit of "
          + Parallax.MAX_REGION_NAME);
    }
    for (byte c : b) {
      if (c == 0) throw new InvalidArgumentException("region name contains a NUL character");
    }
    byte[] z = new byte[b.length + 1];
    System.arraycopy(b, 0, z, 0, b.length);
    return z;
  }
}
