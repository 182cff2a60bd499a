package io.parallaxkv.mongo;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * The keys of a collection's region. One region holds the collection's documents, all its index
 * entries and its catalog, so that one engine write batch — atomic within a region — covers a
 * document together with its index entries and counters.
 *
 * <pre>
 *   0x01 name                                   catalog entry (BSON)
 *   0x02 KeyString(_id)                         the document (BSON)
 *   0x03 indexId(4) KeyString(fields) KeyString(_id) len(2)   an index entry (empty value)
 * </pre>
 *
 * An index entry ends with its record's {@code _id} (so entries of equal field values are
 * distinct and ordered by {@code _id}) and the length of that suffix (so the record key can be
 * cut out without decoding the fields).
 */
final class KeyLayout {
  static final byte META = 0x01;
  static final byte RECORD = 0x02;
  static final byte INDEX = 0x03;

  private KeyLayout() {}

  static byte[] meta(String name) {
    byte[] n = name.getBytes(StandardCharsets.UTF_8);
    byte[] k = new byte[n.length + 1];
    k[0] = META;
    System.arraycopy(n, 0, k, 1, n.length);
    return k;
  }

  static byte[] record(byte[] idKeyString) {
    byte[] k = new byte[idKeyString.length + 1];
    k[0] = RECORD;
    System.arraycopy(idKeyString, 0, k, 1, idKeyString.length);
    return k;
  }

  /** The first byte of every index entry of {@code indexId}. */
  static byte[] indexPrefix(int indexId) {
    return new byte[] {INDEX, (byte) (indexId >>> 24), (byte) (indexId >>> 16),
        (byte) (indexId >>> 8), (byte) indexId};
  }

  static byte[] indexEntry(int indexId, byte[] fields, byte[] idKeyString) {
    byte[] prefix = indexPrefix(indexId);
    byte[] k = new byte[prefix.length + fields.length + idKeyString.length + 2];
    System.arraycopy(prefix, 0, k, 0, prefix.length);
    System.arraycopy(fields, 0, k, prefix.length, fields.length);
    System.arraycopy(idKeyString, 0, k, prefix.length + fields.length, idKeyString.length);
    k[k.length - 2] = (byte) (idKeyString.length >>> 8);
    k[k.length - 1] = (byte) idKeyString.length;
    return k;
  }

  private static int idLength(byte[] entry) {
    return ((entry[entry.length - 2] & 0xff) << 8) | (entry[entry.length - 1] & 0xff);
  }

  /** The record an index entry points to. */
  static RecordKey recordOfEntry(byte[] entry) {
    int idLen = idLength(entry);
    return RecordKey.ofKey(record(Arrays.copyOfRange(entry, entry.length - 2 - idLen,
        entry.length - 2)));
  }

  /** The encoded field values of an index entry (between the index id and the {@code _id}). */
  static byte[] fieldsOfEntry(byte[] entry) {
    return Arrays.copyOfRange(entry, 5, entry.length - 2 - idLength(entry));
  }

  /** The smallest key greater than every key that starts with {@code prefix}. */
  static byte[] successor(byte[] prefix) {
    int i = prefix.length - 1;
    while (i >= 0 && prefix[i] == (byte) 0xff) i--;
    if (i < 0) throw new IllegalArgumentException("no successor of an all-0xff prefix");
    byte[] s = Arrays.copyOf(prefix, i + 1);
    s[i]++;
    return s;
  }

  static byte[] concat(byte[] a, byte[] b) {
    byte[] k = Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, k, a.length, b.length);
    return k;
  }
}
