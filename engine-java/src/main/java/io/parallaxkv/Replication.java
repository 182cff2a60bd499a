package io.parallaxkv;

import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.NativeMemory;
import io.parallaxkv.internal.Scratch;
import java.nio.ByteOrder;

/**
 * The engine's replication hooks ({@code replication.h}): what a primary/backup replication
 * layer needs from a region (Talos, "send index").
 *
 * <ul>
 *   <li>A primary's log, read from an LSN: {@link #openLog} gives {@link LogCursor}s whose
 *       chunks of records (the WAL's, values included) a backup applies with {@link #apply},
 *       keeping the primary's LSNs; records it holds already are skipped.
 *   <li>Send index: {@link #exportIndex} takes the primary's device levels (kept alive until
 *       closed); {@link #installIndex} copies those a send-index backup lacks into its own
 *       segments, rewriting the addresses inside their nodes, and makes them its levels without
 *       a compaction, trimming its log copy to the LSN they cover.
 *   <li>{@link #setRole}: a backup role (a send-index backup never compacts), or
 *       {@link Role#PRIMARY} to promote a backup.
 * </ul>
 *
 * <p>Send-index mode copies leaves as they are, so both regions need {@code Placement.IN_PLACE}
 * and values up to 1 MiB. A build-index backup can instead start from a {@link #snapshot} of the
 * primary's pairs ({@link #rebase}), which works for every placement and value size. Cursors, exports and installs belong to one thread at a time and are
 * closed with their region.
 */
public final class Replication {
  /** Bytes of one volume segment, the unit in which levels are shipped. */
  public static final int SEGMENT_SIZE = 2 << 20;

  /** A log cursor's limit unless set ({@code PAR_REPL_CURSOR_LIMIT}): 64 segments, 128 MiB. */
  public static final int DEFAULT_LOG_LIMIT = 64;

  private Replication() {}

  /** A region's role. */
  public enum Role {
    /** An ordinary region: writes, reads, compactions. */
    PRIMARY,
    /**
     * Takes shipped records into its log copy only, and its levels from the primary; refuses the
     * caller's writes ({@link InvalidArgumentException}, nothing kept).
     */
    BACKUP_SEND_INDEX,
    /** Takes shipped records into its log and L0, and compacts its own copy. */
    BACKUP_BUILD_INDEX
  }

  /**
   * A region's replication counters ({@code par_repl_stats}); {@code mirrorBytes}: what a
   * send-index backup wrote to its copy of the primary's large log since the open (apply, as
   * shipped large values arrive, and installs);
   * {@code mediumSegments}: the primary's medium-log segments they copied (each once while the
   * backup's levels point into it); {@code segmentBytes}: what installs wrote for the segments
   * they copied (the blocks their nodes and records reach, the mirror bytes installs wrote
   * included).
   */
  public record Stats(Role role, long logLsn, long l0Lsn, long coveredLsn, long recordsApplied,
      long recordsSkipped, long treesInstalled, long segmentsInstalled, long compactions,
      long mirrorBytes, long mediumSegments, long segmentBytes) {}

  /** Records read from a log: {@code records} ends with the record of LSN {@code lastLsn}. */
  public record Chunk(byte[] records, long lastLsn) {}

  /**
   * Changes the region's role. To a backup role: the region should be new. Back to
   * {@link Role#PRIMARY} (promotion): a send-index backup replays its log copy into L0; send no
   * write to the region until this returns. During the replay the region compacts but takes no
   * sequence number of its own (no large-log GC; {@link #stats} reports
   * {@link Role#BACKUP_BUILD_INDEX}). A role lasts while the region is open.
   */
  public static void setRole(Region region, Role role) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Native.check(api, api.replSetRole(r, role.ordinal()));
    } finally {
      region.state.release();
    }
  }

  /**
   * Applies shipped records (bytes {@code [off, off + len)} of {@code records}, as a
   * {@link LogCursor} returned them) to the region's log copy and returns the newest LSN of the
   * region's log. With {@link WriteOptions#DEFAULT} the records are held as a write without sync
   * is (written within the durability interval; Talos's backups hold the log in memory until a
   * segment fills), and become durable at the next apply with {@link WriteOptions#SYNC}, at a
   * promotion ({@link #setRole} syncs the log copy first) or when the region closes; with {@link
   * WriteOptions#SYNC} this returns once they are durable. Throws {@link
   * InvalidArgumentException} for a gap, a region that is not a backup or {@link
   * WriteOptions#NO_WAL}, {@link CorruptionException} for malformed bytes.
   */
  public static long apply(Region region, byte[] records, int off, int len, WriteOptions options) {
    java.util.Objects.checkFromIndexSize(off, len, records.length);
    java.util.Objects.requireNonNull(options, "options");
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Scratch s = Scratch.get(len);
      try {
        s.buffer().put(Scratch.DATA, records, off, len);
        Native.check(api, api.replApply(r, s.address() + Scratch.DATA, len, options.flags(), s.address()));
        return s.out(0);
      } finally {
        s.release();
      }
    } finally {
      region.state.release();
    }
  }

  /** A snapshot of a region and the newest LSN it sees ({@link #snapshot}). */
  public record SnapshotAt(Snapshot snapshot, long lsn) {}

  /**
   * A snapshot of the region and its LSN, every record up to which is durable when this returns:
   * the state transfer of a build-index backup. Its pairs, written into a new region set to
   * {@link Role#BACKUP_BUILD_INDEX} with {@link WriteOptions#NO_WAL}, then {@link #rebase}d to
   * the LSN, make a copy that takes shipped records from {@code lsn + 1}: open the log cursor for
   * it before the snapshot (at {@link Stats#l0Lsn()} + 1), so that the log after it is kept. Works
   * for every placement and value size, unlike shipped levels. Close the snapshot when done.
   */
  public static SnapshotAt snapshot(Region region) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Scratch s = Scratch.get(0);
      Native.check(api, api.replSnapshot(r, s.address(), s.address() + 8));
      return new SnapshotAt(new Snapshot(region, s.out(0)), s.out(1));
    } finally {
      region.state.release();
    }
  }

  /**
   * On a build-index backup loaded from a {@link #snapshot} at {@code lsn}: flushes the loaded
   * pairs into its levels and makes {@code lsn} the newest LSN of its log, so that shipped records
   * follow from {@code lsn + 1}. Throws {@link InvalidArgumentException} when the region is not a
   * build-index backup or holds an LSN past {@code lsn}.
   */
  public static void rebase(Region region, long lsn) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Native.check(api, api.replRebase(r, lsn));
    } finally {
      region.state.release();
    }
  }

  /** The region's replication counters. */
  public static Stats stats(Region region) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      long[] v = new long[12];
      // Called for every replicated write: the thread's scratch, not a fresh direct buffer.
      Scratch s = Scratch.get(8 * 32);
      try {
        long n = Math.min(api.replStats(r, s.address() + Scratch.DATA, 32), 32);
        if (n < v.length) throw new IllegalStateException("par_repl_stats gave " + n + " counters");
        for (int i = 0; i < v.length; i++) v[i] = s.buffer().getLong(Scratch.DATA + 8 * i);
      } finally {
        s.release();
      }
      return new Stats(Role.values()[(int) v[0]], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8],
          v[9], v[10], v[11]);
    } finally {
      region.state.release();
    }
  }

  /** A reader of the region's log from {@code fromLsn}, the first LSN of a record. */
  public static LogCursor openLog(Region region, long fromLsn) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Scratch s = Scratch.get(0);
      Native.check(api, api.replCursorOpen(r, fromLsn, s.address()));
      return new LogCursor(region, s.out(0));
    } finally {
      region.state.release();
    }
  }

  /** The region's device levels as they are now, for {@link #installIndex} on a backup. */
  public static IndexExport exportIndex(Region region) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Scratch s = Scratch.get(0);
      Native.check(api, api.replExportOpen(r, s.address()));
      return new IndexExport(region, s.out(0));
    } finally {
      region.state.release();
    }
  }

  /** Starts installing a layout ({@link IndexExport#layout()}) on a send-index backup. */
  public static IndexInstall installIndex(Region region, byte[] layout) {
    NativeApi api = region.api;
    long r = region.state.acquire();
    try {
      Scratch s = Scratch.get(layout.length);
      Native.check(api, api.replInstallBegin(r, Native.in(layout, s, 0), layout.length,
          s.address()));
      return new IndexInstall(region, s.out(0));
    } finally {
      region.state.release();
    }
  }

  private static HandleState handle(Region region, String kind, long ptr,
      java.util.function.LongConsumer close) {
    return new HandleState(kind + " of region '" + region.name() + "'", ptr, region.state, p -> {
      close.accept(p);
      return null;
    }, Native.HANDLE_ERRORS, true);
  }

  /**
   * A native buffer a handle keeps across calls, usable from any thread; freed with the handle
   * (closed by its owner or its region, or found leaked), whose close action frees it.
   */
  private static final class KeptBuffer {
    private final NativeApi api;
    private NativeMemory mem;

    KeptBuffer(NativeApi api) {
      this.api = api;
    }

    synchronized NativeMemory atLeast(int size) {
      if (mem == null || mem.size() < size) {
        free();
        mem = api.allocateShared(size);
      }
      return mem;
    }

    synchronized void free() {
      if (mem != null) mem.close();
      mem = null;
    }
  }

  /**
   * Reads a primary's log ({@code par_repl_cursor_*}). While open, a cursor keeps the primary's
   * WAL from the first LSN of the last chunk it returned (like a replication slot): compactions
   * do not trim it, so a reader that must send that chunk again opens a new cursor there before
   * closing this one. A cursor that would keep more than 64 segments (128 MiB) the levels cover
   * is released instead, and its reads throw {@link NoSuchEntryException}. Its methods are
   * synchronized; any thread may call them.
   */
  public static final class LogCursor implements AutoCloseable {
    private final NativeApi api;
    private final HandleState state;
    private final KeptBuffer buf;

    LogCursor(Region region, long ptr) {
      this.api = region.api;
      NativeApi a = api;
      KeptBuffer b = buf = new KeptBuffer(a);
      this.state = handle(region, "Log cursor", ptr, p -> {
        a.replCursorClose(p);
        b.free();
      });
      state.register(this);
    }

    /**
     * The next durable records, about {@code maxBytes} at most (more when one record alone is
     * larger), or null when none follows yet. Throws {@link NoSuchEntryException} when the next
     * LSN is no longer in the log (a compaction covered it before the cursor opened, or the cursor
     * was released: ship the index first).
     */
    public synchronized Chunk read(int maxBytes) {
      long c = state.acquire();
      Scratch out = Scratch.get(0); // the out slots: length, last LSN
      try {
        int cap = Math.max(maxBytes, 4096);
        for (;;) {
          NativeMemory m = buf.atLeast(cap);
          int rc = api.replCursorRead(c, m.address, cap, out.address(), out.address() + 8);
          long len = out.out(0);
          if (rc == ParallaxException.ETOOBIG && len > cap) {
            cap = Math.toIntExact(len);
            continue;
          }
          Native.check(api, rc);
          if (len == 0) return null;
          byte[] records = new byte[(int) len];
          m.buffer.get(0, records);
          return new Chunk(records, out.out(1));
        }
      } finally {
        out.release();
        state.release();
      }
    }

    /**
     * The most WAL segments the levels cover that this cursor may keep (the engine's default is
     * {@link #DEFAULT_LOG_LIMIT}); past it the cursor is released and its reads throw
     * {@link NoSuchEntryException}, so that a stalled reader does not grow the primary's disk
     * without bound. A state transfer raises it for its duration.
     */
    public synchronized void setLimit(int segments) {
      if (segments <= 0) throw new IllegalArgumentException("a cursor's limit is at least 1 segment");
      long c = state.acquire();
      try {
        Native.check(api, api.replCursorSetLimit(c, segments));
      } finally {
        state.release();
      }
    }

    /**
     * From now on {@link #read} returns records once the primary's log has written them to its
     * file, before they are durable, and pushes what writers appended to the file itself (no
     * fdatasync on the way; the log syncs within its durability interval). For a primary that
     * acknowledges a write once its backups hold it and writes without {@link WriteOptions#SYNC}
     * (Talos): a power cut of the primary may lose records a backup holds, so its volume must not
     * come back as the same copy.
     */
    public synchronized void shipWritten() {
      long c = state.acquire();
      try {
        Native.check(api, api.replCursorShipWritten(c));
      } finally {
        state.release();
      }
    }

    @Override
    public synchronized void close() {
      state.close();
    }
  }

  /**
   * A primary's levels at one moment ({@code par_repl_export_*}). Its methods are synchronized:
   * segments are read through one native buffer of the export's, kept until it closes.
   */
  public static final class IndexExport implements AutoCloseable {
    private final NativeApi api;
    private final HandleState state;
    private final KeptBuffer segBuf;

    IndexExport(Region region, long ptr) {
      this.api = region.api;
      NativeApi a = api;
      KeptBuffer b = segBuf = new KeptBuffer(a);
      this.state = handle(region, "Index export", ptr, p -> {
        a.replExportClose(p);
        b.free();
      });
      state.register(this);
    }

    /** The encoded layout: every tree, its id, root and segments. */
    public byte[] layout() {
      long x = state.acquire();
      try (NativeMemory out = api.allocate(8)) {
        int rc = api.replExportLayout(x, 0, 0, out.address);
        if (rc != ParallaxException.ETOOBIG) Native.check(api, rc);
        int len = Math.toIntExact(out.buffer.getLong(0));
        try (NativeMemory m = api.allocate(Math.max(len, 1))) {
          Native.check(api, api.replExportLayout(x, m.address, len, out.address));
          byte[] b = new byte[len];
          m.buffer.get(0, b);
          return b;
        }
      } finally {
        state.release();
      }
    }

    /** The LSN the exported levels cover. */
    public long coveredLsn() {
      long x = state.acquire();
      try {
        return api.replExportCovered(x);
      } finally {
        state.release();
      }
    }

    /**
     * Copies the part of segment {@code seg} of the layout that an install needs into the start
     * of {@code dst} (room for {@link #SEGMENT_SIZE} bytes) and returns its length: a tree's last
     * segment, a medium set's and a large-log head are mostly unused, and what follows their nodes
     * or records need not be sent ({@link IndexInstall#segment}).
     */
    public synchronized int segment(int seg, byte[] dst) {
      if (dst.length < SEGMENT_SIZE) throw new InvalidArgumentException("buffer under a segment");
      long x = state.acquire();
      try {
        NativeMemory m = segBuf.atLeast(SEGMENT_SIZE + 8);
        Native.check(api, api.replExportSegment(x, seg, m.address, m.address + SEGMENT_SIZE));
        int len = (int) m.buffer.order(ByteOrder.nativeOrder()).getLong(SEGMENT_SIZE);
        m.buffer.get(0, dst, 0, len);
        return len;
      } finally {
        state.release();
      }
    }

    @Override
    public synchronized void close() {
      state.close();
    }
  }

  /**
   * An install of shipped levels on a send-index backup ({@code par_repl_install_*}). Its methods
   * are synchronized: the engine's install takes one call at a time, and segments pass through
   * one native buffer of the install's, kept until it closes.
   */
  public static final class IndexInstall implements AutoCloseable {
    private final NativeApi api;
    private final HandleState state;
    private final KeptBuffer segBuf;

    IndexInstall(Region region, long ptr) {
      this.api = region.api;
      NativeApi a = api;
      KeptBuffer b = segBuf = new KeptBuffer(a);
      this.state = handle(region, "Index install", ptr, p -> {
        a.replInstallClose(p);
        b.free();
      });
      state.register(this);
    }

    /** The primary's segments the backup needs (of trees it does not hold yet). */
    public synchronized int[] needed() {
      long in = state.acquire();
      try {
        int n = (int) api.replInstallNeeded(in, 0, 0);
        int[] segs = new int[n];
        try (NativeMemory m = api.allocate(Math.max(4 * n, 4))) {
          api.replInstallNeeded(in, m.address, n);
          m.buffer.order(ByteOrder.nativeOrder());
          for (int i = 0; i < n; i++) segs[i] = m.buffer.getInt(4 * i);
        }
        return segs;
      } finally {
        state.release();
      }
    }

    /**
     * Copies one needed segment, rewriting its nodes: {@code data} holds its first bytes, as
     * {@link IndexExport#segment} gave them (at most {@link #SEGMENT_SIZE}; the rest are taken as
     * zeros).
     */
    public synchronized void segment(int seg, byte[] data) {
      if (data.length > SEGMENT_SIZE) throw new InvalidArgumentException("data over a segment");
      long in = state.acquire();
      try {
        NativeMemory m = segBuf.atLeast(Math.max(data.length, 1));
        m.buffer.put(0, data, 0, data.length);
        Native.check(api, api.replInstallSegment(in, seg, m.address, data.length));
      } finally {
        state.release();
      }
    }

    /** Makes the levels the region's and trims its log copy; throws {@link BusyException}
     * when its levels changed since the install began. */
    public synchronized void commit() {
      long in = state.acquire();
      try {
        Native.check(api, api.replInstallCommit(in));
      } finally {
        state.release();
      }
    }

    /** Frees the install (and, without a commit, the segments it took). */
    @Override
    public synchronized void close() {
      state.close();
    }
  }
}
