package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.Missing;
import de.bwaldvogel.mongo.bson.BinData;
import de.bwaldvogel.mongo.bson.BsonJavaScript;
import de.bwaldvogel.mongo.bson.BsonRegularExpression;
import de.bwaldvogel.mongo.bson.BsonTimestamp;
import de.bwaldvogel.mongo.bson.Decimal128;
import de.bwaldvogel.mongo.bson.LegacyUUID;
import de.bwaldvogel.mongo.bson.MaxKey;
import de.bwaldvogel.mongo.bson.MinKey;
import de.bwaldvogel.mongo.bson.ObjectId;
import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.Collection;
import java.util.Date;
import java.util.Map;
import java.util.UUID;

/**
 * An order-preserving, byte-comparable encoding of BSON values, in the spirit of MongoDB's
 * KeyString: comparing two encodings as unsigned bytes gives MongoDB's order of the values
 * (types first, in BSON comparison order; numbers by value whatever their type; strings by their
 * UTF-8 bytes, i.e. the simple binary collation). Every encoding is self-delimiting, so that
 * encodings concatenate into compound keys that sort field by field; a descending field is
 * encoded with every byte inverted, which reverses its order and keeps it self-delimiting.
 */
final class KeyString {
  // Type ranks in MongoDB's comparison order. Missing fields index as null, as in MongoDB.
  static final int MIN_KEY = 0x01;
  static final int NULL = 0x05;
  static final int NUMBER = 0x0a;
  static final int STRING = 0x0f;
  static final int OBJECT = 0x14;
  static final int ARRAY = 0x19;
  static final int BIN_DATA = 0x1e;
  static final int OBJECT_ID = 0x23;
  static final int BOOLEAN = 0x28;
  static final int DATE = 0x2d;
  static final int TIMESTAMP = 0x32;
  static final int REGEX = 0x37;
  static final int CODE = 0x3c;
  static final int MAX_KEY = 0x7f;

  /** Ends an object or array; below every type rank so a shorter container sorts first. */
  private static final int END = 0x00;

  private static final int BIN_SUBTYPE_GENERIC = 0;
  private static final int BIN_SUBTYPE_UUID_LEGACY = 3;
  private static final int BIN_SUBTYPE_UUID = 4;

  private KeyString() {}

  /** The encoding of one value, ascending. */
  static byte[] encode(Object value) {
    Builder b = new Builder();
    b.append(value, false);
    return b.toByteArray();
  }

  /** The type rank of a value (its first encoded byte, ascending). */
  static int rank(Object value) {
    if (value == null || value instanceof Missing) return NULL;
    if (value instanceof MinKey) return MIN_KEY;
    if (value instanceof MaxKey) return MAX_KEY;
    if (value instanceof Number) return NUMBER;
    if (value instanceof String) return STRING;
    if (value instanceof Map) return OBJECT;
    if (value instanceof Collection) return ARRAY;
    if (value instanceof BinData || value instanceof UUID || value instanceof LegacyUUID
        || value instanceof byte[]) {
      return BIN_DATA;
    }
    if (value instanceof ObjectId) return OBJECT_ID;
    if (value instanceof Boolean) return BOOLEAN;
    if (value instanceof Instant || value instanceof Date) return DATE;
    if (value instanceof BsonTimestamp) return TIMESTAMP;
    if (value instanceof BsonRegularExpression) return REGEX;
    if (value instanceof BsonJavaScript) return CODE;
    throw new IllegalArgumentException("cannot index a value of " + value.getClass().getName());
  }

  /** Accumulates encoded values into one key. */
  static final class Builder {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream(64);
    private boolean invert;

    Builder bytes(byte[] raw) {
      out.writeBytes(raw);
      return this;
    }

    Builder rawByte(int b) {
      out.write(b);
      return this;
    }

    Builder append(Object value, boolean descending) {
      invert = descending;
      value(value);
      invert = false;
      return this;
    }

    int size() {
      return out.size();
    }

    byte[] toByteArray() {
      return out.toByteArray();
    }

    private void put(int b) {
      out.write(invert ? ~b & 0xff : b & 0xff);
    }

    private void putLong(long v) {
      for (int shift = 56; shift >= 0; shift -= 8) put((int) (v >>> shift));
    }

    private void value(Object value) {
      int rank = rank(value);
      put(rank);
      switch (rank) {
        case NUMBER -> number((Number) value);
        case STRING -> string((String) value);
        case OBJECT -> object(value);
        case ARRAY -> {
          for (Object element : (Collection<?>) value) value(element);
          put(END);
        }
        case BIN_DATA -> binData(value);
        case OBJECT_ID -> {
          for (byte b : ((ObjectId) value).toByteArray()) put(b);
        }
        case BOOLEAN -> put((Boolean) value ? 1 : 0);
        case DATE -> putLong(millis(value) ^ Long.MIN_VALUE);
        case TIMESTAMP -> putLong(((BsonTimestamp) value).getValue());
        case REGEX -> {
          BsonRegularExpression regex = (BsonRegularExpression) value;
          string(regex.getPattern());
          string(regex.getOptions() == null ? "" : regex.getOptions());
        }
        case CODE -> string(((BsonJavaScript) value).getCode());
        default -> { } // null, MinKey, MaxKey: the rank is the whole encoding
      }
    }

    private void object(Object value) {
      // MongoDB compares embedded documents element by element: the value's type, the field
      // name, then the value.
      for (Map.Entry<?, ?> e : ((Map<?, ?>) value).entrySet()) {
        Object v = e.getValue();
        if (v instanceof Missing) continue;
        put(rank(v));
        string(String.valueOf(e.getKey()));
        value(v);
      }
      put(END);
    }

    /**
     * Numbers of every BSON type compare by value. A number is split into the largest double
     * {@code hi <= value} and the non-negative rest {@code value - hi}; the rest is only non-zero
     * for longs beyond 2^53, so that distinct longs keep distinct keys. Decimal128 values are
     * keyed by their nearest double (documented: a unique index may see two decimals closer
     * than a double's precision as duplicates; queries re-check every candidate anyway).
     */
    private void number(Number n) {
      double hi;
      long rest = 0;
      if (n instanceof Long || n instanceof Integer || n instanceof Short || n instanceof Byte) {
        long l = n.longValue();
        hi = (double) l;
        if (new BigDecimal(hi).compareTo(BigDecimal.valueOf(l)) > 0) hi = Math.nextDown(hi);
        rest = new BigDecimal(l).subtract(new BigDecimal(hi)).longValueExact();
      } else if (n instanceof Decimal128 d) {
        hi = d.doubleValue();
      } else {
        hi = n.doubleValue();
      }
      if (Double.isNaN(hi)) {
        putLong(0); // NaN sorts below every other number, as in MongoDB
      } else {
        if (hi == 0.0) hi = 0.0; // -0.0 == 0.0
        long bits = Double.doubleToLongBits(hi);
        putLong(bits < 0 ? ~bits : bits ^ Long.MIN_VALUE);
      }
      putLong(rest);
    }

    /** UTF-8 bytes, 0x00 escaped as 0x00 0xFF, terminated by 0x00. */
    private void string(String s) {
      for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
        put(b);
        if (b == 0) put(0xff);
      }
      put(0);
    }

    /** MongoDB orders binary data by length, then subtype, then bytes. */
    private void binData(Object value) {
      byte[] data;
      int subtype;
      if (value instanceof UUID u) {
        data = uuidBytes(u);
        subtype = BIN_SUBTYPE_UUID;
      } else if (value instanceof LegacyUUID u) {
        data = uuidBytes(u.getUuid());
        subtype = BIN_SUBTYPE_UUID_LEGACY;
      } else if (value instanceof BinData b) {
        data = b.getData();
        subtype = BIN_SUBTYPE_GENERIC;
      } else {
        data = (byte[]) value;
        subtype = BIN_SUBTYPE_GENERIC;
      }
      for (int shift = 24; shift >= 0; shift -= 8) put(data.length >>> shift);
      put(subtype);
      for (byte b : data) put(b);
    }

    private static byte[] uuidBytes(UUID u) {
      byte[] b = new byte[16];
      long hi = u.getMostSignificantBits();
      long lo = u.getLeastSignificantBits();
      for (int i = 0; i < 8; i++) {
        b[i] = (byte) (hi >>> (56 - 8 * i));
        b[8 + i] = (byte) (lo >>> (56 - 8 * i));
      }
      return b;
    }

    private static long millis(Object value) {
      return value instanceof Instant i ? i.toEpochMilli() : ((Date) value).getTime();
    }
  }
}
