package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A second server halting inside the failover of the first (Faults): the master between
 * fencing the backups and writing the map, and the backup it chose after its copy became the
 * primary and before it served. One copy of each region is left; it must hold every
 * acknowledged write, become primary, and the replication factor must come back.
 *
 * <p>Three servers and two regions place every region on every server: r0 = (s1 primary, s2,
 * s3), r1 = (s2 primary, s3, s1) in the order the master sorts them, and s1, started alone,
 * wins the master's election.
 */
class CrashDuringFailoverTest {
  @TempDir Path dir;

  /** The master fences r1's backups after r1's primary dies, then halts. */
  @Test
  @Timeout(240)
  void masterHaltingBetweenFenceAndMapLosesNoAcknowledgedWrite() throws Exception {
    try (Cluster cl = new Cluster(dir, "send-index")) {
      String master = cl.start(Faults.MASTER_FENCED + ":1");
      String s2 = cl.start(), s3 = cl.start();
      try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 20000)) {
        RegionInfo r1 = FailoverTest.waitFor(c, "r1", 30000, r -> true);
        FailoverTest.waitFor(c, "r0", 30000, r -> true);
        assertTrue(cl.log(master).contains("master: created region"), "s1 is not the master" + cl.logs());
        assertEquals(s2, r1.primary().server(), r1.encode());
        Writers w = new Writers(c, 3, 1000);
        Thread.sleep(1500);
        cl.kill(s2);
        awaitDeath(cl, master, Faults.MASTER_FENCED);
        recoverAndVerify(cl, c, w, s3, master, s2);
      }
    }
  }

  /**
   * r0's primary (also the master) dies with the writers paused, so its backups hold the same
   * log and the new master promotes the first of them, s2, which halts once its copy is the
   * primary. s2 was also r1's primary: both regions fail over to s3.
   */
  @Test
  @Timeout(240)
  void backupHaltingInItsPromotionLosesNoAcknowledgedWrite() throws Exception {
    try (Cluster cl = new Cluster(dir, "send-index")) {
      String s1 = cl.start();
      String promoted = cl.start(Faults.BACKUP_PROMOTED + ":1");
      String s3 = cl.start();
      try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 20000)) {
        RegionInfo r0 = FailoverTest.waitFor(c, "r0", 30000, r -> true);
        FailoverTest.waitFor(c, "r1", 30000, r -> true);
        assertEquals(s1, r0.primary().server(), r0.encode());
        assertEquals(promoted, r0.backups().get(0).server(), r0.encode());
        Writers w = new Writers(c, 3, 1000);
        Thread.sleep(1500);
        w.pause();
        cl.kill(s1);
        awaitDeath(cl, promoted, Faults.BACKUP_PROMOTED);
        w.resume();
        recoverAndVerify(cl, c, w, s3, s1, promoted);
      }
    }
  }

  private static void awaitDeath(Cluster cl, String id, String point) throws Exception {
    long end = System.currentTimeMillis() + 60000;
    while (cl.alive(id)) {
      if (System.currentTimeMillis() > end) fail(id + " never reached " + point + cl.logs());
      Thread.sleep(50);
    }
    assertTrue(cl.log(id).contains("crash point " + point + " reached"), id + " died elsewhere:" + cl.logs());
  }

  /**
   * With two of three servers gone, the survivor takes both regions over; two replacements
   * restore three copies; every acknowledged write is there.
   */
  private static void recoverAndVerify(Cluster cl, ReplicatedClient c, Writers w, String survivor,
      String... dead) throws Exception {
    cl.start();
    cl.start();
    for (String region : c.regions().keySet()) {
      FailoverTest.waitFor(c, region, 60000, r -> r.primary().server().equals(survivor));
    }
    long acks = w.acks.get();
    long end = System.currentTimeMillis() + 60000;
    while (w.acks.get() < acks + 50) {
      if (System.currentTimeMillis() > end) fail("writes not acknowledged again" + cl.logs());
      Thread.sleep(20);
    }
    w.stop();
    FailoverTest.waitReplicated(c, 90000);
    FailoverTest.verify(c, w);
    FailoverTest.assertBackupsNeverCompacted(c);
    for (var v : c.regions().values()) {
      for (String d : dead) assertTrue(v.info().member(d) == null, d + " still in " + v.info().encode());
    }
  }
}
