package io.parallaxkv.replication;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/** Key-value pairs as bytes: (u32 key length, key, u32 value length, value)*. */
final class Pairs {
  private Pairs() {}

  static byte[] encode(List<byte[][]> pairs) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    ByteBuffer len = ByteBuffer.allocate(4);
    for (byte[][] p : pairs) {
      for (byte[] x : p) {
        out.write(len.putInt(0, x.length).array(), 0, 4);
        out.write(x, 0, x.length);
      }
    }
    return out.toByteArray();
  }

  /** IllegalArgumentException for bytes that are not pairs. */
  static List<byte[][]> decode(byte[] bytes) {
    ByteBuffer in = ByteBuffer.wrap(bytes);
    List<byte[][]> pairs = new ArrayList<>();
    while (in.hasRemaining()) {
      byte[][] p = new byte[2][];
      for (int i = 0; i < 2; i++) {
        int len = in.remaining() >= 4 ? in.getInt() : -1;
        if (len < 0 || len > in.remaining()) throw new IllegalArgumentException("malformed pairs");
        p[i] = new byte[len];
        in.get(p[i]);
      }
      pairs.add(p);
    }
    return pairs;
  }
}
