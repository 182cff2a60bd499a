package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A soak, not a test (skipped unless {@code -Drepl.soak=CYCLES}; {@code -Drepl.soak.minutes=M},
 * default 60, bounds its time): the kill cycles. Three writers record every acknowledged
 * (key, version) throughout; each cycle {@code kill -9}s the primary of a region (r0 and r1 in
 * turn) mid-load, starts a replacement server, waits until writes are acknowledged again and
 * every region has three complete copies. A server that exits on its own (its ZooKeeper session
 * lost on a loaded machine) is replaced too, and counted. At the end every acknowledged write
 * must be at its latest acknowledged version (or a later attempted one) and no send-index backup
 * may have compacted. {@code -Drepl.soak.mode=build-index} runs build-index mode (replacements
 * loaded from snapshots) instead of send-index; {@code -Drepl.soak.value=BYTES} sets the
 * writers' value size (1000 by default, a medium pair; 2000 puts every value in the large log,
 * which send-index backups mirror); {@code -Drepl.soak.keys=N} the keys each writer cycles
 * through (150 by default: a tree of one level; thousands make deeper trees, whose flushes into
 * L1 write medium-log sets that the backups' installed trees share). Prints the cycles completed
 * and the failover times; results in docs/replication.md.
 */
class KillCycleSoak {
  @TempDir Path dir;

  @Test
  void killCyclesLoseNoAcknowledgedWrite() throws Exception {
    int cycles = Integer.getInteger("repl.soak", 0);
    assumeTrue(cycles > 0, "a soak: -Drepl.soak=CYCLES runs it");
    long deadline = System.currentTimeMillis() + Long.getLong("repl.soak.minutes", 60) * 60_000;
    String mode = System.getProperty("repl.soak.mode", "send-index");
    try (Cluster cl = new Cluster(dir, mode)) {
      List<String> live = new ArrayList<>();
      for (int i = 0; i < 3; i++) live.add(cl.start());
      try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 20000)) {
        FailoverTest.waitFor(c, "r0", 30000, r -> true);
        FailoverTest.waitFor(c, "r1", 30000, r -> true);
        Writers w = new Writers(c, 3, Integer.getInteger("repl.soak.value", 1000),
            Integer.getInteger("repl.soak.keys", Writers.KEYS));
        List<Long> failoverMs = new ArrayList<>();
        int done = 0, exitedOnTheirOwn = 0;
        while (done < cycles && System.currentTimeMillis() < deadline) {
          Thread.sleep(1500);
          String region = done % 2 == 0 ? "r0" : "r1";
          String victim = FailoverTest.waitFor(c, region, 30000, r -> true).primary().server();
          long acksBefore = w.acks.get();
          long killed = System.currentTimeMillis();
          cl.kill(victim);
          live.remove(victim);
          for (String id : new ArrayList<>(live)) {
            if (!cl.alive(id)) {
              live.remove(id);
              exitedOnTheirOwn++;
            }
          }
          while (live.size() < 3) live.add(cl.start());
          FailoverTest.waitFor(c, region, 30000, r -> !r.primary().server().equals(victim));
          while (w.acks.get() < acksBefore + 50) {
            if (System.currentTimeMillis() - killed > 60000) fail("no writes acknowledged 60 s after the kill" + cl.logs());
            Thread.sleep(20);
          }
          failoverMs.add(System.currentTimeMillis() - killed);
          FailoverTest.waitReplicated(c, 120000);
          done++;
          System.out.printf("cycle %d: %s's primary %s killed, writes acknowledged again after %d ms, RF 3 restored "
              + "after %d ms; %d acks so far%n", done, region, victim, failoverMs.get(failoverMs.size() - 1),
              System.currentTimeMillis() - killed, w.acks.get());
        }
        w.stop();
        FailoverTest.waitReplicated(c, 120000);
        FailoverTest.verify(c, w);
        if (mode.equals("send-index")) FailoverTest.assertBackupsNeverCompacted(c);
        for (var v : c.regions().values()) {
          for (RegionInfo.Member m : v.info().backups()) {
            Frame f = c.callServer(m.server(), Frame.request(Frame.Type.STATS, v.info().name(), 0, 0, null, null), 3000);
            ByteBuffer b = ByteBuffer.wrap(f.a()); // Replication.Stats, in order
            System.out.printf("%s's backup %s: %d trees, %d segments installed, %d of them medium-log ones%n",
                v.info().name(), m.server(), b.getLong(6 * 8), b.getLong(7 * 8), b.getLong(10 * 8));
          }
        }
        List<Long> sorted = new ArrayList<>(failoverMs);
        sorted.sort(null);
        System.out.printf("kill cycles (%s): %d of %d done, %d acknowledged writes, none lost; failover median %d ms, "
            + "max %d ms; %d servers exited on their own (session lost) and were replaced%n", mode, done, cycles,
            w.acks.get(), sorted.get(sorted.size() / 2), sorted.get(sorted.size() - 1), exitedOnTheirOwn);
        assertTrue(done > 0, "no cycle completed in the time given");
      }
    }
  }
}
