package io.parallaxkv.replication;

import io.parallaxkv.replication.RegionInfo.Member;
import java.io.Closeable;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The master: one region server at a time, elected through a Curator {@link LeaderLatch}. While
 * it leads it keeps the region map in step with membership, every few hundred milliseconds:
 * creates the regions once enough servers are up, fails a region over when its primary's session
 * expired, drops dead backups and those its primary reports unreachable, and adds live servers as
 * backups until each region has {@code rf} copies. It writes the map only by conditional updates, so a deposed master's stale
 * write fails.
 *
 * <p>Failover (the only step that moves a primary): every live backup is fenced at the new epoch
 * first (it then rejects the old primary's records, so the old primary can acknowledge nothing
 * more: each acknowledgement needed every backup), answering its newest LSN and whether it is
 * complete. The complete backup with the newest LSN (the first in the map's order on a tie)
 * becomes primary: it holds every
 * acknowledged write, and every other backup's log is a prefix of its log (all received the same
 * stream in order). Backups whose log is longer than the new primary's are dropped.
 *
 * <p>A master that reaches ZooKeeper but none of a failed region's live backups (a partition
 * ZooKeeper does not see) cannot fail it over; after {@link #HANDOVER_MS} of that it hands its
 * leadership over (it leaves the election and joins again at its end), so that a server that
 * reaches the backups does it. Where no server can, leadership just moves round the servers.
 */
final class Master implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(Master.class);
  /** How long a master may fail to reach every live backup of a failed region before it hands over. */
  static final long HANDOVER_MS = 3000;

  private final Coordinator coord;
  private final Peers peers;
  private final String self;
  private final int rf, nregions;
  /** Replaced (on the master thread) when this server hands its leadership over. */
  private volatile LeaderLatch latch;
  private final Thread thread;
  private volatile boolean running = true;
  /** Master thread only: since when failovers reached none of a region's live backups (0: they did). */
  private long unreachedSince;

  Master(Coordinator coord, Peers peers, String self, int rf, int nregions) throws Exception {
    this.coord = coord;
    this.peers = peers;
    this.self = self;
    this.rf = rf;
    this.nregions = nregions;
    this.latch = coord.masterLatch(self);
    latch.start();
    thread = new Thread(this::loop, "master");
    thread.setDaemon(true);
    thread.start();
  }

  private void loop() {
    while (running) {
      try {
        if (latch.await(200, TimeUnit.MILLISECONDS)) {
          reconcile();
        } else {
          unreachedSince = 0;
        }
        Thread.sleep(150);
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        LOG.warn("master: {}", e.toString());
      }
    }
  }

  private void reconcile() throws Exception {
    Set<String> live = coord.liveServers();
    Map<String, Coordinator.Versioned> map = coord.regions();
    if (map.isEmpty()) {
      createRegions(live);
      return;
    }
    for (Coordinator.Versioned v : map.values()) {
      // Leadership lost or handed over meanwhile: the map's conditional writes would keep a stale
      // master's changes out, but the next master reconciles from a fresh read anyway.
      if (!latch.hasLeadership()) return;
      RegionInfo r = v.info();
      if (!live.contains(r.primary().server())) {
        failover(v, live);
        continue;
      }
      List<Member> backups = new ArrayList<>();
      for (Member m : r.backups()) if (live.contains(m.server())) backups.add(m);
      // Backups the primary cannot reach (while ZooKeeper can) hold every write back: drop them,
      // but never the last one. That alone does not keep a primary cut off from all its backups
      // from going on alone (a backup added here joins outside its ack set): the primary never
      // reports the last backup of its ack set (PrimaryRegion.claimReport).
      for (String s : coord.suspects(r.name(), r.epoch())) {
        if (backups.size() > 1) backups.removeIf(m -> m.server().equals(s));
      }
      long epoch = r.epoch() + 1;
      for (String s : live.stream().sorted().toList()) {
        if (backups.size() + 1 >= rf) break;
        // joins with an empty copy: state transfer, outside the ack set until it is current
        if (r.member(s) == null) backups.add(new Member(s, epoch, false));
      }
      if (!backups.equals(r.backups())) {
        RegionInfo n = new RegionInfo(r.name(), epoch, r.start(), r.end(), r.primary(), backups);
        if (coord.update(n, v.version())) LOG.info("master: region {} now {}", r.name(), n.encode());
      }
    }
  }

  private void createRegions(Set<String> live) throws Exception {
    if (live.size() < rf) return;
    List<String> servers = live.stream().sorted().toList();
    for (int i = 0; i < nregions; i++) {
      byte[] start = i == 0 ? new byte[0] : new byte[] {(byte) (i * 256 / nregions)};
      byte[] end = i == nregions - 1 ? new byte[0] : new byte[] {(byte) ((i + 1) * 256 / nregions)};
      List<Member> members = new ArrayList<>();
      for (int k = 0; k < rf; k++) members.add(new Member(servers.get((i + k) % servers.size()), 1, true));
      RegionInfo r = new RegionInfo("r" + i, 1, start, end, members.get(0), members.subList(1, rf));
      if (coord.create(r)) LOG.info("master: created region {}", r.encode());
    }
  }

  private record Fenced(Member member, long lsn, boolean complete) {}

  private void failover(Coordinator.Versioned v, Set<String> live) throws Exception {
    RegionInfo r = v.info();
    long epoch = r.epoch() + 1;
    List<Fenced> fenced = new ArrayList<>();
    boolean called = false, answered = false;
    for (Member m : r.backups()) {
      if (!live.contains(m.server())) continue;
      called = true;
      try {
        Frame resp = peers.get(m.server()).call(
            Frame.request(Frame.Type.FENCE, r.name(), epoch, 0, null, null), 2000).get();
        answered = true;
        if (resp.status() == Frame.Status.OK) {
          fenced.add(new Fenced(m, resp.num(), resp.a().length > 0 && resp.a()[0] == 1));
        } else {
          LOG.warn("master: {} refused the fence of {}: {} {}", m.server(), r.name(), resp.status(), resp.message());
        }
      } catch (Exception e) {
        LOG.warn("master: cannot fence {} of {}: {}", m.server(), r.name(), e.toString());
      }
    }
    if (called && !answered) {
      handOverAfterTimeout(r);
      return;
    }
    unreachedSince = 0;
    Faults.reach(Faults.MASTER_FENCED);
    // Stream.max keeps the first of equal maxima: on a tie, the first backup in the map's order.
    Fenced chosen = fenced.stream().filter(Fenced::complete).max(Comparator.comparingLong(Fenced::lsn)).orElse(null);
    if (chosen == null) {
      LOG.error("master: region {} has no complete live backup to promote (epoch {})", r.name(), r.epoch());
      return;
    }
    List<Member> backups = new ArrayList<>();
    for (Fenced f : fenced) {
      if (f == chosen || f.lsn() > chosen.lsn()) continue;
      backups.add(new Member(f.member().server(), f.member().joinEpoch(), f.complete()));
    }
    Member primary = new Member(chosen.member().server(), chosen.member().joinEpoch(), true);
    RegionInfo n = new RegionInfo(r.name(), epoch, r.start(), r.end(), primary, backups);
    if (coord.update(n, v.version())) {
      LOG.info("master: failover of region {}: {} (LSN {})", r.name(), n.encode(), chosen.lsn());
    }
  }

  /** Failing over r, this master reached none of its live backups (see the class comment). */
  private void handOverAfterTimeout(RegionInfo r) throws Exception {
    long now = System.currentTimeMillis();
    if (unreachedSince == 0) unreachedSince = now;
    if (now - unreachedSince < HANDOVER_MS) return;
    LOG.warn("master: reached none of region {}'s live backups for {} ms: handing the leadership over", r.name(),
        now - unreachedSince);
    unreachedSince = 0;
    LeaderLatch old = latch;
    latch = coord.masterLatch(self);
    old.close();
    latch.start();
  }

  @Override
  public void close() {
    running = false;
    thread.interrupt();
    try {
      thread.join(5000); // it may be replacing the latch
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      latch.close();
    } catch (Exception e) {
      LOG.debug("latch close: {}", e.toString());
    }
  }
}
