package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Servers halting inside the protocol's steps (Faults): a primary mid log shipping or mid
 * index shipping, a backup in the middle of an install or between an install's commit and its
 * answer. No acknowledged write may be lost and the replication factor comes back.
 */
class CrashPointTest {
  @TempDir Path dir;

  @ParameterizedTest
  @ValueSource(strings = {Faults.PRIMARY_MID_LOG + ":400", Faults.PRIMARY_MID_INDEX + ":3",
      Faults.BACKUP_MID_INSTALL + ":3", Faults.BACKUP_INSTALL_COMMITTED + ":2"})
  @Timeout(180)
  void crashInsideTheProtocolLosesNoAcknowledgedWrite(String crashAt) throws Exception {
    try (Cluster cl = new Cluster(dir, "send-index")) {
      // Only the first server crashes: the primary of r0 and a backup of r1 (the master's
      // placement), so each point is reached on it and a second crash cannot follow.
      List<String> ids = new ArrayList<>();
      for (int i = 0; i < 3; i++) ids.add(cl.start(i == 0 ? crashAt : null));
      try (ReplicatedClient c = new ReplicatedClient(cl.zk.getConnectString(), 20000)) {
        FailoverTest.waitFor(c, "r0", 30000, r -> true);
        FailoverTest.waitFor(c, "r1", 30000, r -> true);
        Writers w = new Writers(c, 3, 1000);
        String dead = null;
        long end = System.currentTimeMillis() + 60000;
        while (dead == null) {
          for (String id : ids) if (!cl.alive(id)) dead = id;
          if (System.currentTimeMillis() > end) fail("no server reached " + crashAt + cl.logs());
          Thread.sleep(50);
        }
        String point = crashAt.substring(0, crashAt.indexOf(':'));
        assertTrue(cl.log(dead).contains("crash point " + point + " reached"), "died elsewhere:" + cl.logs());
        cl.start(); // the replacement
        String gone = dead;
        for (String region : c.regions().keySet()) {
          FailoverTest.waitFor(c, region, 30000, r -> r.member(gone) == null);
        }
        long acks = w.acks.get();
        while (w.acks.get() < acks + 50) Thread.sleep(20);
        w.stop();
        FailoverTest.waitReplicated(c, 60000);
        FailoverTest.verify(c, w);
        FailoverTest.assertBackupsNeverCompacted(c);
        assertTrue(w.acks.get() > 0);
      }
    }
  }
}
