package io.parallaxkv.replication;

import io.parallaxkv.Region;
import io.parallaxkv.Replication;
import io.parallaxkv.WriteOptions;
import io.parallaxkv.replication.RegionInfo.Member;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeoutException;

/**
 * The primary side of one region: client writes, and one {@link Shipper} per backup.
 *
 * <p>The acknowledgement rule: a write (durable in the primary's log first) is acknowledged
 * only once every backup in the ack set holds it durably in its log copy. A backup is in the ack
 * set from the start when the map says it is complete; a joining one enters once it has caught up
 * with the log, and is told it is complete (a promotion candidate) only once it holds every write
 * acknowledged before it entered — checked under this object's lock, which every
 * acknowledgement takes too.
 */
final class PrimaryRegion implements AutoCloseable {
  /** The primary learned from a backup that it was deposed (a higher epoch exists). */
  static final class DeposedException extends Exception {
    DeposedException(String msg) {
      super(msg);
    }
  }

  /** Reports a backup this primary cannot reach (to the master, through ZooKeeper). */
  interface Reporter {
    void unreachable(String region, long epoch, String backup) throws Exception;
  }

  /**
   * The largest value a send-index region takes (the engine's {@code PAR_MAX_INLINE_VALUE}): a
   * backup's log copy holds each shipped value whole in a WAL segment, and a backup mirrors the
   * primary's large log segment by segment, not the runs of segments a value larger than one
   * takes. Refused before it is written, with a clear error. Build-index regions transfer state
   * by snapshot and take values up to {@link Frame#MAX_VALUE}.
   */
  static final int MAX_SEND_INDEX_VALUE = 1 << 20;

  final LocalCopy copy;
  final boolean sendIndex;
  final Reporter reporter;
  private final Peers peers;
  private final Map<String, Shipper> shippers = new HashMap<>();
  private long epoch;
  private long highestAcked;
  private String deposed;

  PrimaryRegion(LocalCopy copy, Peers peers, boolean sendIndex, Reporter reporter) {
    this.copy = copy;
    this.reporter = reporter;
    this.peers = peers;
    this.sendIndex = sendIndex;
  }

  Region region() {
    return copy.region();
  }

  synchronized long epoch() {
    return epoch;
  }

  /** Follows a map change: the epoch and the backups to ship to. */
  synchronized void update(RegionInfo info) {
    epoch = info.epoch();
    Map<String, Member> want = new HashMap<>();
    for (Member m : info.backups()) want.put(m.server(), m);
    for (var it = shippers.entrySet().iterator(); it.hasNext(); ) {
      var e = it.next();
      Member m = want.get(e.getKey());
      if (m == null || m.joinEpoch() != e.getValue().joinEpoch) {
        e.getValue().close();
        it.remove();
      }
    }
    for (Member m : want.values()) {
      shippers.computeIfAbsent(m.server(), s -> new Shipper(this, s, m.joinEpoch(), peers.get(s), m.complete()));
    }
    notifyAll(); // a dropped backup no longer holds writes back
  }

  /** Applies a client write and waits until every backup of the ack set holds it. */
  void write(byte[] key, byte[] value, boolean delete, long timeoutMs)
      throws DeposedException, TimeoutException, InterruptedException {
    int max = sendIndex ? MAX_SEND_INDEX_VALUE : Frame.MAX_VALUE;
    if (!delete && value.length > max) {
      throw new IllegalArgumentException("a value of " + value.length + " bytes: a " + (sendIndex ? "send" : "build")
          + "-index region takes up to " + max + (sendIndex ? " (shipped levels hold values in their leaves)" : ""));
    }
    synchronized (this) {
      if (deposed != null) throw new DeposedException(deposed);
    }
    if (delete) region().delete(key, WriteOptions.SYNC);
    else region().put(key, value, WriteOptions.SYNC);
    long lsn = Replication.stats(region()).logLsn(); // >= this write's LSN
    synchronized (this) {
      shippers.values().forEach(Shipper::wake);
      long deadline = System.currentTimeMillis() + timeoutMs;
      while (deposed == null && !replicated(lsn)) {
        long left = deadline - System.currentTimeMillis();
        if (left <= 0) throw new TimeoutException("write not replicated in " + timeoutMs + " ms");
        wait(left);
      }
      if (deposed != null) throw new DeposedException(deposed);
      highestAcked = Math.max(highestAcked, lsn);
    }
  }

  private boolean replicated(long lsn) {
    for (Shipper s : shippers.values()) if (s.inAckSet && s.acked < lsn) return false;
    return true;
  }

  /**
   * Whether s may be reported unreachable at epoch (and then it counts as reported): a backup
   * outside the ack set always, one in it only while another of the ack set, not reported at
   * epoch, remains. The master drops whom it is told to, and a backup it adds instead joins
   * outside the ack set: reporting the last one would leave this primary acknowledging writes
   * alone, held by no other copy. So a primary cut off from all its backups stalls instead, until
   * the partition heals or ZooKeeper sees it fail (FailoverTest.primaryCutOffFromItsBackupsStalls).
   */
  synchronized boolean claimReport(Shipper s, long epoch) {
    if (s.reportedEpoch == epoch) return false;
    boolean another = !s.inAckSet;
    for (Shipper o : shippers.values()) another |= o != s && o.inAckSet && o.reportedEpoch != epoch;
    if (another) s.reportedEpoch = epoch;
    return another;
  }

  /** The report claimed at epoch did not reach ZooKeeper. */
  synchronized void unclaimReport(Shipper s, long epoch) {
    if (s.reportedEpoch == epoch) s.reportedEpoch = -1;
  }

  /** A backup acknowledged records up to lsn. */
  synchronized void acked(Shipper s, long lsn) {
    if (lsn > s.acked) s.acked = lsn;
    notifyAll();
  }

  /**
   * Puts a caught-up joining backup in the ack set; returns the LSN it must reach to hold
   * every write acknowledged so far (after this, no write is acknowledged without it).
   */
  synchronized long enterAckSet(Shipper s) {
    s.inAckSet = true;
    return highestAcked;
  }

  synchronized void deposed(String why) {
    deposed = why;
    notifyAll();
  }

  synchronized boolean isDeposed() {
    return deposed != null;
  }

  @Override
  public synchronized void close() {
    shippers.values().forEach(Shipper::close);
    shippers.clear();
    deposed = "closed";
    notifyAll();
  }
}
