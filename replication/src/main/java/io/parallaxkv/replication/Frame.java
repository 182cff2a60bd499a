package io.parallaxkv.replication;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * One message of the replication protocol, request or response. Every message has the same
 * fields (a message type uses those it needs, the others stay empty), so one codec serves all:
 *
 * <pre>
 * type u8 | id u64 | status u8 | region (u16 length + UTF-8) | epoch u64 | num u64 | a (u32 length + bytes) | b (u32 length + bytes)
 * </pre>
 *
 * A response carries its request's {@code id}. {@link #decode} rejects anything malformed with
 * {@link IllegalArgumentException}; the receiver answers {@link Status#BAD_REQUEST} or drops the
 * connection, and never fails otherwise.
 */
public record Frame(Type type, long id, Status status, String region, long epoch, long num,
    byte[] a, byte[] b) {
  /** The largest value a region takes (the engine's {@code PAR_MAX_VALUE_SIZE}). */
  public static final int MAX_VALUE = 64 << 20;

  /**
   * Largest encoded frame: a write of the largest value and key, or a shipped record holding
   * them, with room for the headers.
   */
  public static final int MAX_SIZE = MAX_VALUE + (64 << 10);

  private static final byte[] NONE = new byte[0];

  /** Message types; a response has its request's type. */
  public enum Type {
    /** Client write: a = key, b = value; num = 1 for a delete. */
    WRITE,
    /** Client read: a = key. Response: OK with b = value, or NOT_FOUND. */
    GET,
    /**
     * A page of the primary's region in key order: a = the key after which it starts (empty: the
     * region's first), num = the most bytes of pairs it holds (it always holds one pair, if any
     * follows). Response a = encoded pairs ({@link Pairs}), num = 1 when more follow them.
     */
    SCAN,
    /** Primary to backup: a = shipped log records. Response num = the backup's newest LSN. */
    APPLY,
    /**
     * Primary to backup: num = the install's id, a = layout. Response a = the needed segments
     * (u32 each).
     */
    INSTALL_BEGIN,
    /** Primary to backup: num = the install's id, a = a segment's bytes, b = its number (u32). */
    INSTALL_SEGMENT,
    /** Primary to backup: num = the install's id. Response num = the backup's newest LSN. */
    INSTALL_COMMIT,
    /** Primary to backup: it holds every acknowledged write; from now on a promotion candidate. */
    MARK_COMPLETE,
    /**
     * Primary to a build-index backup, a state transfer by snapshot: num = the load's id. The copy
     * starts again empty (one that is complete, a promotion candidate, refuses).
     */
    LOAD_BEGIN,
    /** Primary to backup: num = the load's id, a = pairs of the snapshot ({@link Pairs}). */
    LOAD,
    /**
     * Primary to backup: num = the load's id, a = the snapshot's LSN (u64). Response num = the
     * backup's newest LSN (the snapshot's).
     */
    LOAD_COMMIT,
    /** Master to backup: reject epochs below this one. Response num = newest LSN, b[0] = complete. */
    FENCE,
    /**
     * Replication counters of the local copy, for tests and benchmarks: response a = 15 x u64, the
     * fields of {@code Replication.Stats} in order (role .. segment bytes), then the payload bytes
     * the copy took from its primaries: shipped log records, and levels (or loaded pairs), then
     * the number of log messages it took; num = 1 for a complete copy.
     */
    STATS
  }

  /** Outcome of a request. */
  public enum Status {
    OK, NOT_FOUND, BAD_REQUEST, NOT_PRIMARY, STALE_EPOCH, UNAVAILABLE, ERROR
  }

  public Frame {
    region = region == null ? "" : region;
    a = a == null ? NONE : a;
    b = b == null ? NONE : b;
    status = status == null ? Status.OK : status;
  }

  public static Frame request(Type type, String region, long epoch, long num, byte[] a, byte[] b) {
    return new Frame(type, 0, Status.OK, region, epoch, num, a, b);
  }

  public Frame withId(long newId) {
    return new Frame(type, newId, status, region, epoch, num, a, b);
  }

  public Frame reply(Status s, long n, byte[] ra, byte[] rb) {
    return new Frame(type, id, s, region, epoch, n, ra, rb);
  }

  public Frame ok(long n) {
    return reply(Status.OK, n, null, null);
  }

  public Frame fail(Status s, String message) {
    return reply(s, 0, null, message.getBytes(StandardCharsets.UTF_8));
  }

  /** The error message of a failed response. */
  public String message() {
    return new String(b, StandardCharsets.UTF_8);
  }

  /**
   * The encoded message in parts: the header up to a's length, a, b's length, b. The fields are
   * wrapped, not copied (a shipped segment is 2 MiB), so a and b must not change until the
   * message is written.
   */
  public ByteBuffer[] encode() {
    byte[] r = region.getBytes(StandardCharsets.UTF_8);
    ByteBuffer head = ByteBuffer.allocate(1 + 8 + 1 + 2 + r.length + 8 + 8 + 4);
    head.put((byte) type.ordinal()).putLong(id).put((byte) status.ordinal());
    head.putShort((short) r.length).put(r).putLong(epoch).putLong(num).putInt(a.length).flip();
    return new ByteBuffer[] {head, ByteBuffer.wrap(a), ByteBuffer.allocate(4).putInt(0, b.length), ByteBuffer.wrap(b)};
  }

  public static Frame decode(ByteBuffer in) {
    try {
      int t = in.get() & 0xff;
      long id = in.getLong();
      int s = in.get() & 0xff;
      if (t >= Type.values().length || s >= Status.values().length) {
        throw new IllegalArgumentException("unknown message type " + t + " or status " + s);
      }
      String region = new String(bytes(in, in.getShort() & 0xffff), StandardCharsets.UTF_8);
      long epoch = in.getLong();
      long num = in.getLong();
      byte[] a = bytes(in, in.getInt());
      byte[] b = bytes(in, in.getInt());
      if (in.hasRemaining()) throw new IllegalArgumentException(in.remaining() + " bytes after a message");
      return new Frame(Type.values()[t], id, Status.values()[s], region, epoch, num, a, b);
    } catch (java.nio.BufferUnderflowException e) {
      throw new IllegalArgumentException("truncated message", e);
    }
  }

  private static byte[] bytes(ByteBuffer in, int len) {
    if (len < 0 || len > in.remaining()) throw new IllegalArgumentException("field of " + len + " bytes");
    byte[] v = new byte[len];
    in.get(v);
    return v;
  }
}
