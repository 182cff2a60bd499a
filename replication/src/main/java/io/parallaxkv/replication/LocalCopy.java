package io.parallaxkv.replication;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.Replication;
import io.parallaxkv.Replication.Role;
import io.parallaxkv.WriteOptions;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This server's copy of one region, as primary or backup, for one membership (its join epoch).
 * The backup side of the protocol lives here: every message from a primary carries its epoch,
 * and one lower than the highest this copy has seen (from a primary or the master's fence) is
 * refused: that is what keeps a deposed primary from getting any write acknowledged.
 *
 * <p>All methods but {@link #installSegment} are synchronized: shipped records, installs, loads,
 * fences and the role change of a promotion happen one at a time, which the engine hooks require.
 */
final class LocalCopy implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(LocalCopy.class);

  /** The request's epoch is below one this copy saw. */
  static final class StaleEpochException extends Exception {
    /** The epoch this copy is at: the newest it saw. */
    final long seen;

    StaleEpochException(long seen, String msg) {
      super(msg);
      this.seen = seen;
    }
  }

  final String name;
  final long joinEpoch;
  /** Replaced only by a load that starts the copy again ({@link #loadBegin}), never on a primary. */
  private volatile Region region;
  private final Parallax volume;
  private final boolean sendIndex;
  private long epoch;
  private boolean complete;
  /**
   * Whether the region's role is PRIMARY, kept with every role change this copy makes (the only
   * ones): checked for every shipped message without asking the engine.
   */
  private boolean primary;
  private Replication.IndexInstall install;
  /**
   * The id its primary gave the install in progress. A segment or commit of another install (a
   * request whose call timed out and that runs late, after its sender began a new install) is
   * refused: it would put another export's bytes in this install's trees.
   */
  private long installId;
  /** The id its primary gave the load in progress (0: none); the same guard as installId. */
  private long loadId;
  /**
   * What this copy's primaries sent it, in payload bytes of the messages it took: shipped log
   * records, and levels (layouts and segments; the whole region, for a load). Send index trades
   * the second for a backup's compactions; {@code STATS} reports both, and how many messages
   * brought the log (a backup's per-message cost is most of its CPU over TCP).
   */
  private final LongAdder logBytes = new LongAdder();
  private final LongAdder logMessages = new LongAdder();
  private final LongAdder indexBytes = new LongAdder();

  LocalCopy(Parallax volume, String name, long joinEpoch, boolean primary, boolean sendIndex, boolean complete,
      long epoch) {
    this.volume = volume;
    this.name = name;
    this.joinEpoch = joinEpoch;
    this.sendIndex = sendIndex;
    this.complete = complete;
    this.epoch = epoch;
    if (volume.regions().contains(name)) volume.dropRegion(name); // a copy of an earlier membership
    this.region = volume.region(name);
    this.primary = true; // a region opens as one; setBackupRole changes it
    if (!primary) setBackupRole();
  }

  private void setBackupRole() {
    Replication.setRole(region, sendIndex ? Role.BACKUP_SEND_INDEX : Role.BACKUP_BUILD_INDEX);
    primary = false;
  }

  Region region() {
    return region;
  }

  synchronized Role role() {
    return Replication.stats(region).role();
  }

  synchronized boolean complete() {
    return complete;
  }

  /** Promotes this (complete) backup: its log copy goes into L0 and it serves. */
  synchronized void promote(long newEpoch) {
    if (install != null) install.close(); // the old primary's, never to be committed: frees its segments
    install = null;
    Replication.Stats before = Replication.stats(region);
    if (before.role() != Role.PRIMARY) {
      long t0 = System.nanoTime();
      Replication.setRole(region, Role.PRIMARY);
      // What a failover spends here grows with the log since the last install (--index-interval-ms).
      LOG.info("region {}: promoted, {} log records replayed into L0 in {} ms", name,
          before.logLsn() - Math.max(before.coveredLsn(), before.l0Lsn()), (System.nanoTime() - t0) / 1_000_000);
      Faults.reach(Faults.BACKUP_PROMOTED);
    }
    primary = true;
    epoch = Math.max(epoch, newEpoch);
    complete = true;
  }

  private void check(long reqEpoch) throws StaleEpochException {
    if (reqEpoch < epoch) {
      throw new StaleEpochException(epoch, "region " + name + " is at epoch " + epoch + ", not " + reqEpoch);
    }
    epoch = reqEpoch;
    if (primary) {
      throw new IllegalStateException("region " + name + " is a primary here");
    }
  }

  synchronized long apply(long reqEpoch, byte[] records) throws StaleEpochException {
    check(reqEpoch);
    if (loadId != 0) { // a load abandoned midway (its primary failed, or gave up on it)
      startOver();
      loadId = 0;
    }
    logBytes.add(records.length);
    logMessages.increment();
    if (records.length == 0) return Replication.stats(region).logLsn();
    // Held, not synced (Talos: a backup holds the log in memory): a copy is never reopened (a
    // restarted server discards its volume), so a sync here would protect nothing, and a
    // promotion syncs the log copy before it serves. The primary's own write is synced.
    return Replication.apply(region, records, 0, records.length, WriteOptions.DEFAULT);
  }

  synchronized byte[] installBegin(long reqEpoch, long id, byte[] layout) throws StaleEpochException {
    check(reqEpoch);
    if (install != null) install.close();
    install = null;
    install = Replication.installIndex(region, layout);
    installId = id;
    indexBytes.add(layout.length);
    int[] segs = install.needed();
    ByteBuffer b = ByteBuffer.allocate(4 * segs.length);
    for (int s : segs) b.putInt(s);
    return b.array();
  }

  private void checkInstall(long id) {
    if (install == null || id != installId) {
      throw new IllegalStateException("install " + id + " of region " + name + " is not the one in progress");
    }
  }

  /**
   * Copies a segment of the install in progress. The copy (2 MiB, its nodes rewritten, written
   * out) runs outside this copy's lock, so shipped records, on every write's path, do not wait
   * for it; the install itself takes one call at a time, and one closed meanwhile (a newer
   * install, a promotion) refuses it.
   */
  void installSegment(long reqEpoch, long id, int seg, byte[] data) throws StaleEpochException {
    Replication.IndexInstall in;
    synchronized (this) {
      check(reqEpoch);
      checkInstall(id);
      in = install;
    }
    in.segment(seg, data);
    indexBytes.add(data.length);
    Faults.reach(Faults.BACKUP_MID_INSTALL);
  }

  synchronized long installCommit(long reqEpoch, long id) throws StaleEpochException {
    check(reqEpoch);
    checkInstall(id);
    try {
      install.commit();
    } finally {
      install.close();
      install = null;
    }
    Faults.reach(Faults.BACKUP_INSTALL_COMMITTED);
    return Replication.stats(region).logLsn();
  }

  /**
   * Taken from primaries: payload bytes of shipped log records, of levels or loaded pairs, and
   * the number of log messages.
   */
  long[] received() {
    return new long[] {logBytes.sum(), indexBytes.sum(), logMessages.sum()};
  }

  synchronized void markComplete(long reqEpoch) throws StaleEpochException {
    check(reqEpoch);
    complete = true;
  }

  /**
   * Starts a state transfer by snapshot (build index): the pairs that follow go into an empty
   * copy. A copy that holds anything (records shipped before the primary's log was trimmed past
   * it) starts again; a complete one refuses, since the master may promote it meanwhile.
   */
  synchronized void loadBegin(long reqEpoch, long id) throws StaleEpochException {
    check(reqEpoch);
    if (sendIndex) throw new IllegalStateException("region " + name + " is a send-index copy: it takes levels, not loads");
    if (complete) throw new IllegalStateException("region " + name + " is a complete copy: it is not loaded again");
    if (Replication.stats(region).logLsn() > 0) startOver();
    loadId = id;
  }

  /**
   * Empties the copy. A partly loaded copy must never answer its log's position: its LSNs are
   * the loaded pairs' own, not the primary's, and a primary would go on shipping after them.
   */
  private void startOver() {
    region.close();
    volume.dropRegion(name);
    region = volume.region(name);
    setBackupRole();
  }

  private void checkLoad(long id) {
    if (loadId == 0 || id != loadId) {
      throw new IllegalStateException("load " + id + " of region " + name + " is not the one in progress");
    }
  }

  /** Writes pairs of the primary's snapshot, without the log: the commit makes them durable. */
  synchronized void load(long reqEpoch, long id, List<byte[][]> pairs) throws StaleEpochException {
    check(reqEpoch);
    checkLoad(id);
    for (byte[][] p : pairs) {
      region.put(p[0], p[1], WriteOptions.NO_WAL);
      indexBytes.add(p[0].length + p[1].length);
    }
  }

  /**
   * Makes the loaded pairs the state at the snapshot's LSN; returns this copy's newest LSN. A
   * rebase that fails leaves the load in progress, so that the next message starts over.
   */
  synchronized long loadCommit(long reqEpoch, long id, long lsn) throws StaleEpochException {
    check(reqEpoch);
    checkLoad(id);
    Replication.rebase(region, lsn);
    loadId = 0;
    return Replication.stats(region).logLsn();
  }

  /**
   * The master's fence: no message below epoch from now on; answers (newest LSN, complete), the
   * LSN 0 while a load is in progress.
   */
  synchronized long[] fence(long newEpoch) {
    epoch = Math.max(epoch, newEpoch);
    return new long[] {loadId != 0 ? 0 : Replication.stats(region).logLsn(), complete ? 1 : 0};
  }

  @Override
  public synchronized void close() {
    if (install != null) install.close();
    install = null;
    region.close();
  }

  /** Closes and deletes the copy (this server is no longer a member). */
  synchronized void drop() {
    close();
    volume.dropRegion(name);
  }
}
