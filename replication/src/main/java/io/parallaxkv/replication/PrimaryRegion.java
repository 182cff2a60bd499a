package io.parallaxkv.replication;

import io.parallaxkv.Region;
import io.parallaxkv.Replication;
import io.parallaxkv.WriteOptions;
import io.parallaxkv.replication.RegionInfo.Member;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The primary side of one region: client writes, and one {@link Shipper} per backup.
 *
 * <p>The acknowledgement rule: a write is acknowledged only once every backup in the ack set
 * holds it in its log copy. The primary ships it as soon as its log has written it to the file,
 * not synced (Talos: what makes an acknowledged write safe is the copies, and a restarted server
 * discards its volume, so a sync on the primary would protect nothing they do not), or, with
 * {@code --sync-writes}, once it is durable in the primary's log. A backup is in the ack
 * set from the start when the map says it is complete; a joining one enters once it has caught up
 * with the log, and is told it is complete (a promotion candidate) only once it holds every write
 * acknowledged before it entered — checked under this object's lock, which every
 * acknowledgement takes too.
 */
final class PrimaryRegion implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PrimaryRegion.class);
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

  final LocalCopy copy;
  final boolean sendIndex;
  /** Send index: the levels go to a backup at most this often (Shipper's index loop). */
  final long indexIntervalMs;
  /** Writes are synced in this copy's log before they are shipped (else shipped once written). */
  final boolean syncWrites;
  final Reporter reporter;
  private final Peers peers;
  private final Map<String, Shipper> shippers = new HashMap<>();
  private long epoch;
  private long highestAcked;
  /** Writes waiting for the ack set, by the LSN each needs every backup of it to hold. */
  private final TreeMap<Long, List<Waiter>> waiting = new TreeMap<>();
  private String deposed;

  /** A write waiting for the ack set, failed once its deadline passes. */
  private record Waiter(CompletableFuture<Void> done, long deadlineNanos) {}

  /**
   * Fails the writes whose deadline passed, every {@link #SWEEP_MS}: one periodic sweep per
   * primary instead of a timer task scheduled and cancelled for every write.
   */
  private static final ScheduledExecutorService DEADLINES = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "write-deadlines");
    t.setDaemon(true);
    return t;
  });
  private static final long SWEEP_MS = 50;
  private final ScheduledFuture<?> sweeper;

  PrimaryRegion(LocalCopy copy, Peers peers, boolean sendIndex, long indexIntervalMs, boolean syncWrites,
      Reporter reporter) {
    this.copy = copy;
    this.reporter = reporter;
    this.peers = peers;
    this.sendIndex = sendIndex;
    this.indexIntervalMs = indexIntervalMs;
    this.syncWrites = syncWrites;
    this.sweeper = DEADLINES.scheduleAtFixedRate(this::failLate, SWEEP_MS, SWEEP_MS, TimeUnit.MILLISECONDS);
  }

  Region region() {
    return copy.region();
  }

  synchronized long epoch() {
    return epoch;
  }

  /** Follows a map change: the epoch and the backups to ship to. */
  void update(RegionInfo info) {
    List<CompletableFuture<Void>> done;
    synchronized (this) {
      follow(info);
      done = takeReplicated(); // a dropped backup no longer holds writes back
    }
    done.forEach(w -> w.complete(null));
  }

  private void follow(RegionInfo info) {
    assert Thread.holdsLock(this);
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
  }

  /**
   * Applies a client write (in this copy's log when this returns: durable with syncWrites, else
   * in its tail buffer, which the shippers' cursors push to the file); the future completes
   * once every backup of the ack set holds it, or fails with {@link DeposedException} or a
   * {@link TimeoutException} within {@link #SWEEP_MS} after timeoutMs. No thread waits for the backups: the
   * acknowledgement that covers the write completes it, on that shipper's thread ({@link
   * #acked}). Waking every waiting writer at each acknowledgement, as a monitor's notifyAll
   * did, and a thread per waiting write cost the primary a fifth of its CPU per write
   * (docs/replication.md, Benchmarks).
   */
  CompletableFuture<Void> write(byte[] key, byte[] value, boolean delete, long timeoutMs) throws DeposedException {
    if (!delete && value.length > Frame.MAX_VALUE) {
      throw new IllegalArgumentException("a value of " + value.length + " bytes: a region takes up to " + Frame.MAX_VALUE);
    }
    synchronized (this) {
      if (deposed != null) throw new DeposedException(deposed);
    }
    WriteOptions how = syncWrites ? WriteOptions.SYNC : WriteOptions.DEFAULT;
    if (delete) region().delete(key, how);
    else region().put(key, value, how);
    long lsn = Replication.stats(region()).logLsn(); // >= this write's LSN
    CompletableFuture<Void> done = new CompletableFuture<>();
    long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
    synchronized (this) {
      if (deposed != null) throw new DeposedException(deposed);
      if (replicated(lsn)) {
        highestAcked = Math.max(highestAcked, lsn);
        return CompletableFuture.completedFuture(null);
      }
      waiting.computeIfAbsent(lsn, k -> new ArrayList<>(2)).add(new Waiter(done, deadline));
      shippers.values().forEach(Shipper::wake);
    }
    return done;
  }

  /** How many writes wait for the ack set (tests). */
  synchronized int waitingWrites() {
    int n = 0;
    for (List<Waiter> at : waiting.values()) n += at.size();
    return n;
  }

  /** Fails the waiting writes whose deadline passed (the sweep's task). */
  private void failLate() {
    List<CompletableFuture<Void>> late = new ArrayList<>();
    long now = System.nanoTime();
    synchronized (this) {
      for (var it = waiting.values().iterator(); it.hasNext(); ) {
        List<Waiter> at = it.next();
        at.removeIf(w -> now - w.deadlineNanos() >= 0 && late.add(w.done()));
        if (at.isEmpty()) it.remove();
      }
    }
    late.forEach(w -> w.completeExceptionally(new TimeoutException("not held by the ack set in time")));
  }

  /**
   * Takes out the writes every backup of the ack set now holds, to be completed once this lock
   * is released (a completion sends the write's answer). They count as acknowledged from here:
   * {@link #enterAckSet} reads highestAcked under the same lock.
   */
  private List<CompletableFuture<Void>> takeReplicated() {
    assert Thread.holdsLock(this);
    long upTo = Long.MAX_VALUE;
    for (Shipper s : shippers.values()) if (s.inAckSet) upTo = Math.min(upTo, s.acked);
    NavigableMap<Long, List<Waiter>> held = waiting.headMap(upTo, true);
    if (held.isEmpty()) return List.of();
    highestAcked = Math.max(highestAcked, held.lastKey());
    List<CompletableFuture<Void>> out = new ArrayList<>();
    held.values().forEach(at -> at.forEach(w -> out.add(w.done())));
    held.clear();
    return out;
  }

  /** Takes out every waiting write, to be failed: this primary is deposed or closed. */
  private List<CompletableFuture<Void>> takeAll() {
    assert Thread.holdsLock(this);
    List<CompletableFuture<Void>> out = new ArrayList<>();
    waiting.values().forEach(at -> at.forEach(w -> out.add(w.done())));
    waiting.clear();
    return out;
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

  /** A backup acknowledged records up to lsn: the writes now held by the whole ack set are. */
  void acked(Shipper s, long lsn) {
    List<CompletableFuture<Void>> done;
    synchronized (this) {
      if (lsn > s.acked) s.acked = lsn;
      done = takeReplicated();
    }
    done.forEach(w -> w.complete(null));
  }

  /**
   * Puts a caught-up joining backup in the ack set; returns the LSN it must reach to hold
   * every write acknowledged so far (after this, no write is acknowledged without it).
   */
  synchronized long enterAckSet(Shipper s) {
    s.inAckSet = true;
    return highestAcked;
  }

  void deposed(String why) {
    List<CompletableFuture<Void>> failed;
    synchronized (this) {
      if (deposed == null) LOG.warn("region {}: deposed at epoch {}: {}", copy.name, epoch, why);
      deposed = why;
      failed = takeAll();
    }
    failed.forEach(w -> w.completeExceptionally(new DeposedException(why)));
  }

  synchronized boolean isDeposed() {
    return deposed != null;
  }

  @Override
  public void close() {
    sweeper.cancel(false);
    List<CompletableFuture<Void>> failed;
    synchronized (this) {
      shippers.values().forEach(Shipper::close);
      shippers.clear();
      deposed = "closed";
      failed = takeAll();
    }
    failed.forEach(w -> w.completeExceptionally(new DeposedException("closed")));
  }
}
