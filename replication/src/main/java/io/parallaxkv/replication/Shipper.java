package io.parallaxkv.replication;

import io.parallaxkv.NoSuchEntryException;
import io.parallaxkv.Region;
import io.parallaxkv.Replication;
import io.parallaxkv.Scanner;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Ships a primary's region to one backup: the log (records as soon as they are durable on the
 * primary) on one thread, and, in send-index mode, the primary's levels after each of its
 * compactions on another, so that copying a large tree never holds the log, and with it every
 * acknowledgement, back. A backup that the primary's log no longer covers (a new one, or one that
 * fell behind a compaction) gets a state transfer first, run while writes go on, then the log
 * from the LSN it covers: in send-index mode the levels (a backup takes shipped records and
 * installs in either order: records its installed levels cover are skipped, and levels covering
 * LSNs its log lacks restart its log after them); in build-index mode the pairs of a snapshot,
 * which the backup writes into its own copy with its own placement.
 *
 * <p>Every message carries the primary's epoch; a backup answering STALE_EPOCH means this
 * primary was deposed.
 */
final class Shipper implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Shipper.class);
  private static final long CALL_MS = 5000;
  /** A backup failing this long is reported to the master, which drops it from the map. */
  private static final long SUSPECT_MS = 3000;
  /**
   * Ids of this process's installs and loads, unique among the shippers of a primary (its epoch
   * tells the primaries apart): the backup takes the segments or pairs, and the commit, of the
   * install or load it began last only.
   */
  private static final AtomicLong TRANSFER_IDS = new AtomicLong();
  /**
   * WAL segments (4 GiB) a cursor may keep past the primary's levels while the backup is not
   * complete: during a state transfer, and while it catches up after one. Copying a large region
   * takes minutes, during which the primary's flushes go on; with the engine's default (128 MiB)
   * the cursor would be released before the copy ends, and the transfer would start again, never
   * done under a steady load. A complete backup's cursors keep the default: it is in the ack set,
   * so writes wait for it rather than leave it behind.
   */
  private static final int TRANSFER_LOG_LIMIT = 2048;
  /** A load message carries pairs of about this many bytes (one pair alone may be larger). */
  private static final int LOAD_BYTES = 1 << 20;

  private final PrimaryRegion primary;
  final String backup;
  final long joinEpoch;
  private final Transport.Connection conn;
  private final Thread thread;
  /** Send-index mode: ships the levels after each compaction. */
  private final Thread indexThread;
  /** One level shipment at a time (the log thread ships them too, when its cursor is behind). */
  private final Object indexLock = new Object();
  private volatile boolean running = true;
  /** Under primary's lock: the backup's newest durable LSN, and whether acks wait for it. */
  long acked;
  boolean inAckSet;
  private boolean completeSent;
  private long completeAt = -1;
  private long catchUpTarget = -1;
  /**
   * Reads the primary's log from the backup's position. A live cursor keeps the primary's WAL
   * from the start of the last chunk it returned, so that chunk can be sent again: a new cursor
   * is always opened before the old one is closed ({@link #reopen}), never leaving the log
   * unpinned in between.
   */
  private Replication.LogCursor cursor;
  /** The last APPLY failed: ask the backup where its log ends before reading on. */
  private boolean reposition;
  /** Under indexLock: the primary's compaction count when its levels were last shipped. */
  private long indexedCompactions = -1;
  /** Levels installed on the backup so far (written under indexLock). */
  private volatile long installs;
  private final Object signal = new Object();
  /**
   * The log thread's: when its calls began to fail (0 while they succeed). The index thread's
   * calls do not reset it: when they did, an index call answered between a failing log call and
   * its check reset the clock to 0, and the backup was reported at once instead of after
   * {@link #SUSPECT_MS} (FailoverTest.primaryCutOffFromItsBackupsStalls saw a backup that had
   * not created its copy yet dropped 40 ms after the region was made).
   */
  private long failingSince;
  /** The log thread's last failure logged, until records go through again. */
  private String lastFailure;
  /** Under primary's lock: the epoch at which this backup was last reported unreachable. */
  long reportedEpoch = -1;

  Shipper(PrimaryRegion primary, String backup, long joinEpoch, Transport.Connection conn, boolean complete) {
    this.primary = primary;
    this.backup = backup;
    this.joinEpoch = joinEpoch;
    this.conn = conn;
    this.inAckSet = complete;
    this.completeSent = complete;
    thread = new Thread(this::loop, "ship-" + primary.copy.name + "-" + backup);
    thread.setDaemon(true);
    indexThread = primary.sendIndex ? new Thread(this::indexLoop, "ship-index-" + primary.copy.name + "-" + backup) : null;
    thread.start();
    if (indexThread != null) {
      indexThread.setDaemon(true);
      indexThread.start();
    }
  }

  void wake() {
    synchronized (signal) {
      signal.notifyAll();
    }
  }

  private Frame call(Frame.Type type, long num, byte[] a) throws Exception {
    return call(type, num, a, null, null);
  }

  /** Sends a request and waits for its answer; crashPoint (tests) is reached in between. */
  private Frame call(Frame.Type type, long num, byte[] a, byte[] b, String crashPoint) throws Exception {
    var pending = conn.call(Frame.request(type, primary.copy.name, primary.epoch(), num, a, b), CALL_MS);
    if (crashPoint != null) Faults.reach(crashPoint);
    Frame resp = pending.get(CALL_MS + 1000, TimeUnit.MILLISECONDS);
    if (resp.status() == Frame.Status.STALE_EPOCH) {
      // The backup saw a newer epoch. Its own, if this primary is at that epoch already: every
      // map change raises the epoch (a backup added too), and this shipper's two threads send
      // on one connection, so a message built before the change can arrive after one built
      // after it. Sent again at the current epoch. Only a newer epoch than this primary's, a
      // failover's fence, deposes it.
      if (resp.num() > 0 && resp.num() <= primary.epoch()) {
        throw new IllegalStateException(type + " to " + backup + " overtaken by this primary's newer epoch: " + resp.message());
      }
      primary.deposed(backup + ": " + resp.message());
      throw new IllegalStateException("deposed: " + resp.message());
    }
    if (resp.status() != Frame.Status.OK) {
      throw new IllegalStateException(type + " to " + backup + ": " + resp.status() + " " + resp.message());
    }
    if (Thread.currentThread() == thread) failingSince = 0;
    return resp;
  }

  private void loop() {
    while (running && !primary.isDeposed()) {
      try {
        if (cursor == null || reposition) {
          long lsn = call(Frame.Type.APPLY, 0, null).num(); // where the backup's log is
          primary.acked(this, lsn);
          reopen(lsn + 1);
          reposition = false;
        }
        Replication.Chunk ch = cursor.read(1 << 20);
        if (ch != null) {
          primary.acked(this, call(Frame.Type.APPLY, 0, ch.records(), null, Faults.PRIMARY_MID_LOG).num());
          lastFailure = null;
          continue;
        }
        maybeComplete();
        synchronized (signal) {
          signal.wait(5);
        }
      } catch (NoSuchEntryException truncated) {
        try {
          if (primary.sendIndex) maybeShipIndex(true, true);
          else transferSnapshot();
        } catch (Exception e) {
          pause(e);
        }
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        pause(e);
      }
    }
    closeCursor();
  }

  private void pause(Exception e) {
    if (!running) return;
    long now = System.currentTimeMillis();
    if (failingSince == 0) failingSince = now;
    // A failure says why once; the same one again, every 100 ms until records go through, does not.
    String why = e.toString();
    if (why.equals(lastFailure)) {
      LOG.debug("shipping {} to {}: {}", primary.copy.name, backup, why);
    } else {
      LOG.info("shipping {} to {} failed, retrying: {}", primary.copy.name, backup, why);
      lastFailure = why;
    }
    long epoch = primary.epoch();
    if (now - failingSince > SUSPECT_MS && primary.claimReport(this, epoch)) {
      try {
        primary.reporter.unreachable(primary.copy.name, epoch, backup);
        LOG.warn("region {}: backup {} unreachable for {} ms: reported", primary.copy.name, backup, now - failingSince);
      } catch (Exception re) {
        primary.unclaimReport(this, epoch);
        LOG.warn("region {}: cannot report {}: {}", primary.copy.name, backup, re.toString());
      }
    }
    reposition = true; // start again from the backup's position (the cursor keeps the log)
    try {
      Thread.sleep(100);
    } catch (InterruptedException ie) {
      Thread.currentThread().interrupt();
      running = false;
    }
  }

  private void closeCursor() {
    if (cursor != null) cursor.close();
    cursor = null;
  }

  /** Moves to a new cursor at lsn, opened before the old one is closed (see {@link #cursor}). */
  private void reopen(long lsn) {
    Replication.LogCursor old = cursor;
    cursor = Replication.openLog(primary.region(), lsn);
    if (!primary.syncWrites) cursor.shipWritten();
    if (!completeSent) cursor.setLimit(TRANSFER_LOG_LIMIT);
    if (old != null) old.close();
  }

  /** A cursor that pins the log after a state transfer's copy while the copy is made. */
  private Replication.LogCursor pinFrom(long lsn) {
    Replication.LogCursor c = Replication.openLog(primary.region(), lsn);
    c.setLimit(TRANSFER_LOG_LIMIT);
    return c;
  }

  /**
   * Send-index mode: the levels, when the primary compacted since they were last shipped, at most
   * once per {@link PrimaryRegion#indexIntervalMs} (10 s by default). Each shipment copies every tree the backup lacks whole,
   * so shipping after every compaction copies each short-lived L1 tree too, and every version of
   * the last level; spacing them out skips those, and the backup's log copy covers the writes in
   * between: a promotion replays up to the interval's log (at 10 s and a full load, up to about
   * 2 s; docs/replication.md, "Failover under a full load").
   */
  private void indexLoop() {
    while (running && !primary.isDeposed()) {
      try {
        maybeShipIndex(false, false);
        Thread.sleep(primary.indexIntervalMs);
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        // The log thread notices an unreachable backup and reports it; try again shortly.
        LOG.debug("shipping the levels of {} to {}: {}", primary.copy.name, backup, e.toString());
        try {
          Thread.sleep(100);
        } catch (InterruptedException ie) {
          return;
        }
      }
    }
  }

  /**
   * Ships the primary's levels when it compacted since the last time (or must: the log cursor is
   * behind them); reopenLog (the log thread only): the cursor goes on after them.
   */
  private void maybeShipIndex(boolean must, boolean reopenLog) throws Exception {
    long shipped = installs;
    synchronized (indexLock) {
      if (must && installs != shipped) { // the index thread just shipped them: go on after them
        reposition = true;
        return;
      }
      long c = primary.region().stats().compactions();
      if (!must && c == indexedCompactions) return;
      shipIndex(c, reopenLog);
    }
  }

  private void shipIndex(long compactions, boolean reopenLog) throws Exception {
    try (Replication.IndexExport x = Replication.exportIndex(primary.region())) {
      // The log after the levels, pinned while they are copied: a compaction meanwhile must not
      // trim what the backup needs after the install.
      Replication.LogCursor after = pinFrom(x.coveredLsn() + 1);
      try {
        long id = TRANSFER_IDS.incrementAndGet();
        ByteBuffer needed = ByteBuffer.wrap(call(Frame.Type.INSTALL_BEGIN, id, x.layout()).a());
        byte[] seg = new byte[Replication.SEGMENT_SIZE];
        while (needed.hasRemaining()) {
          int s = needed.getInt();
          // Only as far as its nodes or records reach: the install takes the rest as zeros.
          byte[] used = Arrays.copyOf(seg, x.segment(s, seg));
          call(Frame.Type.INSTALL_SEGMENT, id, used, ByteBuffer.allocate(4).putInt(s).array(), Faults.PRIMARY_MID_INDEX);
        }
        long lsn = call(Frame.Type.INSTALL_COMMIT, id, null).num();
        primary.acked(this, lsn);
        indexedCompactions = compactions;
        installs++;
        if (reopenLog) {
          reopen(lsn + 1);
          reposition = false;
        }
      } finally {
        after.close();
      }
    }
  }

  /**
   * Build-index mode: the state transfer by snapshot. The backup's copy starts again from the
   * snapshot's pairs (written without its log, in its own placement) and takes the log from the
   * snapshot's LSN on; the cursor kept from before the snapshot pins that log while the pairs are
   * copied.
   */
  private void transferSnapshot() throws Exception {
    Region region = primary.region();
    Replication.LogCursor before = pinFrom(Replication.stats(region).l0Lsn() + 1);
    try {
      Replication.SnapshotAt at = Replication.snapshot(region);
      long id = TRANSFER_IDS.incrementAndGet(), pairs = 0;
      try (var snap = at.snapshot(); Scanner s = snap.scanner()) {
        call(Frame.Type.LOAD_BEGIN, id, null);
        List<byte[][]> batch = new ArrayList<>();
        long bytes = 0;
        for (boolean ok = s.seekToFirst(); ok; ok = s.next()) {
          byte[][] p = {s.key(), s.value()};
          batch.add(p);
          bytes += p[0].length + p[1].length;
          if (bytes >= LOAD_BYTES) {
            call(Frame.Type.LOAD, id, Pairs.encode(batch));
            pairs += batch.size();
            batch.clear();
            bytes = 0;
          }
        }
        if (!batch.isEmpty()) call(Frame.Type.LOAD, id, Pairs.encode(batch));
        pairs += batch.size();
      }
      long lsn = call(Frame.Type.LOAD_COMMIT, id, ByteBuffer.allocate(8).putLong(at.lsn()).array()).num();
      primary.acked(this, lsn);
      reopen(lsn + 1);
      reposition = false;
      LOG.info("region {}: backup {} loaded from a snapshot at LSN {} ({} pairs)", primary.copy.name, backup, lsn, pairs);
    } finally {
      before.close();
    }
  }

  /** A joining backup: into the ack set once current, then complete once it holds every ack. */
  private void maybeComplete() throws Exception {
    if (completeSent) return;
    // A fixed target (the log's end when first checked), not the moving end of the log: under a
    // steady load the backup would never be seen "caught up". Entering early only makes writes
    // wait for it.
    if (catchUpTarget < 0) catchUpTarget = Replication.stats(primary.region()).logLsn();
    synchronized (primary) {
      if (!inAckSet && acked >= catchUpTarget) completeAt = primary.enterAckSet(this);
      if (!inAckSet || acked < completeAt) return;
    }
    call(Frame.Type.MARK_COMPLETE, 0, null);
    completeSent = true;
    LOG.info("region {}: backup {} is complete", primary.copy.name, backup);
  }

  @Override
  public void close() {
    running = false;
    wake();
    thread.interrupt();
    if (indexThread != null) indexThread.interrupt();
  }
}
