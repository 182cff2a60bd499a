package io.parallaxkv.ycsb;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.function.BiConsumer;
import site.ycsb.ByteArrayByteIterator;
import site.ycsb.ByteIterator;

/**
 * The one-value encoding of a YCSB record (a map of field name to bytes) used by every binding
 * here, so that all engines store the same bytes:
 *
 * <pre>
 *   record := field*
 *   field  := varint(nameLength) name varint(valueLength) value
 * </pre>
 *
 * Names are UTF-8; varints are unsigned LEB128 (7 bits a byte, low bits first). Fields appear in
 * the map's iteration order. A one-field record named {@code "f0"} costs 4 bytes of framing for
 * values below 128 bytes and 5 up to 16 KiB, which is how {@link MixWorkload} hits the paper's
 * value sizes (9, 104 and 1004 bytes) exactly.
 */
public final class FieldCodec {
  private FieldCodec() {}

  /** Encodes {@code fields}; each iterator is consumed. */
  public static byte[] encode(Map<String, ByteIterator> fields) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(64);
    for (Map.Entry<String, ByteIterator> e : fields.entrySet()) {
      byte[] name = e.getKey().getBytes(StandardCharsets.UTF_8);
      byte[] value = e.getValue().toArray();
      writeVarint(out, name.length);
      out.write(name, 0, name.length);
      writeVarint(out, value.length);
      out.write(value, 0, value.length);
    }
    return out.toByteArray();
  }

  /**
   * Decodes {@code record} into {@code result}, keeping only the names in {@code fields} (all
   * of them when {@code fields} is null).
   *
   * @throws IllegalArgumentException if {@code record} is not a valid encoding
   */
  public static void decode(byte[] record, Set<String> fields, Map<String, ByteIterator> result) {
    forEach(record, (name, value) -> {
      if (fields == null || fields.contains(name)) result.put(name, new ByteArrayByteIterator(value));
    });
  }

  /** Calls {@code action} with each field of {@code record}, in order. */
  static void forEach(byte[] record, BiConsumer<String, byte[]> action) {
    int[] pos = {0};
    while (pos[0] < record.length) {
      int n = readVarint(record, pos);
      String name = new String(slice(record, pos, n), StandardCharsets.UTF_8);
      int m = readVarint(record, pos);
      action.accept(name, slice(record, pos, m));
    }
  }

  /** Encoded size of one field named {@code name} holding {@code valueLength} bytes. */
  public static int encodedSize(String name, int valueLength) {
    int n = name.getBytes(StandardCharsets.UTF_8).length;
    return varintSize(n) + n + varintSize(valueLength) + valueLength;
  }

  /**
   * The value length that makes a one-field record named {@code name} exactly
   * {@code recordSize} bytes long.
   *
   * @throws IllegalArgumentException if no length does (the framing alone is larger)
   */
  public static int valueLengthFor(String name, int recordSize) {
    for (int v = Math.max(0, recordSize - encodedSize(name, 0) - 4); v <= recordSize; v++) {
      int size = encodedSize(name, v);
      if (size == recordSize) return v;
      if (size > recordSize) break;
    }
    throw new IllegalArgumentException(
        "no one-field record named '" + name + "' is exactly " + recordSize + " bytes");
  }

  private static byte[] slice(byte[] b, int[] pos, int n) {
    if (n < 0 || pos[0] + n > b.length) throw new IllegalArgumentException("truncated record");
    byte[] r = new byte[n];
    System.arraycopy(b, pos[0], r, 0, n);
    pos[0] += n;
    return r;
  }

  private static int varintSize(int v) {
    int n = 1;
    while ((v >>>= 7) != 0) n++;
    return n;
  }

  private static void writeVarint(ByteArrayOutputStream out, int v) {
    while ((v & ~0x7F) != 0) {
      out.write((v & 0x7F) | 0x80);
      v >>>= 7;
    }
    out.write(v);
  }

  private static int readVarint(byte[] b, int[] pos) {
    int v = 0;
    for (int shift = 0; shift < 35; shift += 7) {
      if (pos[0] >= b.length) throw new IllegalArgumentException("truncated record");
      int x = b[pos[0]++] & 0xFF;
      v |= (x & 0x7F) << shift;
      if ((x & 0x80) == 0) return v;
    }
    throw new IllegalArgumentException("bad varint");
  }
}
