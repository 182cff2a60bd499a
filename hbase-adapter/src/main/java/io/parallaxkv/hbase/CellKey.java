package io.parallaxkv.hbase;

import java.io.ByteArrayOutputStream;
import java.util.Arrays;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.KeyValue;
import org.apache.hadoop.hbase.PrivateCellUtil;

/**
 * The engine key of one HBase cell: an order-preserving encoding of (row, family, qualifier,
 * timestamp descending, type descending), so that the engine's unsigned byte order is HBase's
 * {@code CellComparator} order and a scan is a plain key-order walk.
 *
 * <p>Row, family and qualifier are each escaped (0x00 becomes 0x00 0xFF) and terminated by
 * 0x00 0x01: a shorter component sorts before a longer one it prefixes, as in HBase. The
 * timestamp follows as 8 big-endian bytes of {@code Long.MAX_VALUE - ts} (newest first), then one
 * byte {@code 0xFF - type} (delete markers before puts of the same timestamp, as HBase orders
 * them).
 */
final class CellKey {
  private static final byte ESCAPE = 0x00;
  private static final byte ESCAPED_ZERO = (byte) 0xFF;
  private static final byte TERMINATOR = 0x01;
  /** After the terminator of a row: above every cell key of that row, below every later row. */
  private static final byte ROW_END = 0x02;

  private CellKey() {}

  /** The key of a cell with the given coordinates. */
  static byte[] encode(byte[] row, byte[] family, byte[] qualifier, long ts, byte type) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(
        row.length + family.length + qualifier.length + 16);
    escape(out, row);
    escape(out, family);
    escape(out, qualifier);
    long inverted = Long.MAX_VALUE - ts;
    for (int shift = 56; shift >= 0; shift -= 8) out.write((int) (inverted >>> shift));
    out.write(0xFF - (type & 0xFF));
    return out.toByteArray();
  }

  /** The key of {@code cell}. */
  static byte[] of(Cell cell) {
    return encode(copy(cell.getRowArray(), cell.getRowOffset(), cell.getRowLength()),
        copy(cell.getFamilyArray(), cell.getFamilyOffset(), cell.getFamilyLength()),
        copy(cell.getQualifierArray(), cell.getQualifierOffset(), cell.getQualifierLength()),
        cell.getTimestamp(), cell.getTypeByte());
  }

  /** The common prefix of every cell key of {@code row}: the lowest key of the row. */
  static byte[] rowStart(byte[] row) {
    ByteArrayOutputStream out = new ByteArrayOutputStream(row.length + 4);
    escape(out, row);
    return out.toByteArray();
  }

  /** A key above every cell key of {@code row} and below those of any later row. */
  static byte[] rowEnd(byte[] row) {
    byte[] start = rowStart(row);
    byte[] end = Arrays.copyOf(start, start.length);
    end[end.length - 1] = ROW_END;
    return end;
  }

  /** Decodes a cell key and its value back into a cell. */
  static KeyValue decode(byte[] key, byte[] value) {
    int[] pos = {0};
    byte[] row = unescape(key, pos);
    byte[] family = unescape(key, pos);
    byte[] qualifier = unescape(key, pos);
    long inverted = 0;
    for (int i = 0; i < 8; i++) inverted = (inverted << 8) | (key[pos[0] + i] & 0xFF);
    byte type = (byte) (0xFF - (key[pos[0] + 8] & 0xFF));
    return new KeyValue(row, family, qualifier, Long.MAX_VALUE - inverted,
        KeyValue.Type.codeToType(type), value);
  }

  /** True when the key is a delete marker's (its last byte holds the inverted type). */
  static boolean isDeleteMarker(byte[] key) {
    return PrivateCellUtil.isDelete((byte) (0xFF - (key[key.length - 1] & 0xFF)));
  }

  /** The family of a cell key. */
  static byte[] family(byte[] key) {
    int[] pos = {0};
    unescape(key, pos);
    return unescape(key, pos);
  }

  /** The row of a cell key. */
  static byte[] row(byte[] key) {
    return unescape(key, new int[] {0});
  }

  private static void escape(ByteArrayOutputStream out, byte[] b) {
    for (byte x : b) {
      out.write(x);
      if (x == ESCAPE) out.write(ESCAPED_ZERO);
    }
    out.write(ESCAPE);
    out.write(TERMINATOR);
  }

  private static byte[] unescape(byte[] key, int[] pos) {
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    int i = pos[0];
    while (true) {
      byte x = key[i++];
      if (x != ESCAPE) {
        out.write(x);
        continue;
      }
      if (key[i++] == TERMINATOR) break;
      out.write(ESCAPE);
    }
    pos[0] = i;
    return out.toByteArray();
  }

  private static byte[] copy(byte[] a, int off, int len) {
    return Arrays.copyOfRange(a, off, off + len);
  }
}
