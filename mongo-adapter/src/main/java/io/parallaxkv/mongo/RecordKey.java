package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import java.util.Arrays;

/**
 * Where a document lives: its key in the collection's region, {@link KeyLayout#RECORD} followed
 * by the {@link KeyString} of its {@code _id}. The "position" the library's collection and index
 * classes pass around.
 */
final class RecordKey {
  private final byte[] key;

  private RecordKey(byte[] key) {
    this.key = key;
  }

  static RecordKey of(Document document) {
    return ofId(document.get("_id"));
  }

  static RecordKey ofId(Object id) {
    return new RecordKey(KeyLayout.record(KeyString.encode(id)));
  }

  static RecordKey ofKey(byte[] regionKey) {
    return new RecordKey(regionKey);
  }

  /** The key in the region. */
  byte[] key() {
    return key;
  }

  /** The {@link KeyString} of the {@code _id}, the suffix of every index entry of the record. */
  byte[] idKeyString() {
    return Arrays.copyOfRange(key, 1, key.length);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof RecordKey r && Arrays.equals(key, r.key);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(key);
  }

  @Override
  public String toString() {
    return "RecordKey" + Arrays.toString(key);
  }
}
