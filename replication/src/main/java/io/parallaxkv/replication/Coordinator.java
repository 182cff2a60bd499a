package io.parallaxkv.replication;

import java.io.Closeable;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.data.Stat;

/**
 * Everything kept in ZooKeeper, through Curator: live servers (ephemeral nodes under
 * {@code /parallax/servers}), the master's election ({@link LeaderLatch} on
 * {@code /parallax/master}) and the region map (one persistent node per region under
 * {@code /parallax/regions}, changed only by conditional writes on its version), and the backups
 * a primary cannot reach ({@code /parallax/suspects/<region>/<epoch>-<server>}).
 */
public final class Coordinator implements Closeable {
  static final String ROOT = "/parallax";
  static final String SERVERS = ROOT + "/servers";
  static final String REGIONS = ROOT + "/regions";
  static final String MASTER = ROOT + "/master";
  static final String SUSPECTS = ROOT + "/suspects";

  private final CuratorFramework zk;

  /** A region map entry and the node version it was read at. */
  public record Versioned(RegionInfo info, int version) {}

  public Coordinator(String connect, int sessionTimeoutMs) throws InterruptedException {
    zk = CuratorFrameworkFactory.builder().connectString(connect).sessionTimeoutMs(sessionTimeoutMs)
        .connectionTimeoutMs(Math.min(sessionTimeoutMs, 5000)).retryPolicy(new ExponentialBackoffRetry(100, 5))
        .build();
    zk.start();
    if (!zk.blockUntilConnected(30, java.util.concurrent.TimeUnit.SECONDS)) {
      throw new IllegalStateException("no ZooKeeper at " + connect);
    }
  }

  /** Runs onLost when the session is lost (expired): this process's ephemeral state is gone. */
  public void onSessionLost(Runnable onLost) {
    zk.getConnectionStateListenable().addListener((c, s) -> {
      if (s == ConnectionState.LOST) onLost.run();
    });
  }

  /** Announces this server (an ephemeral node, gone with the session). */
  public void register(String server) throws Exception {
    zk.create().creatingParentsIfNeeded().withMode(CreateMode.EPHEMERAL)
        .forPath(SERVERS + "/" + server, server.getBytes(StandardCharsets.UTF_8));
  }

  /**
   * Whether server's node exists and belongs to this client's current session: false once the
   * session expired, also after Curator opened a new one.
   */
  public boolean ownsServerNode(String server) throws Exception {
    Stat st = zk.checkExists().forPath(SERVERS + "/" + server);
    return st != null && st.getEphemeralOwner() == zk.getZookeeperClient().getZooKeeper().getSessionId();
  }

  /** The session timeout ZooKeeper granted (it may differ from the one asked for). */
  public int sessionTimeoutMs() {
    try {
      return zk.getZookeeperClient().getZooKeeper().getSessionTimeout();
    } catch (Exception e) {
      throw new IllegalStateException("no ZooKeeper session", e);
    }
  }

  public Set<String> liveServers() throws Exception {
    if (zk.checkExists().forPath(SERVERS) == null) return Set.of();
    return new HashSet<>(zk.getChildren().forPath(SERVERS));
  }

  public Map<String, Versioned> regions() throws Exception {
    Map<String, Versioned> m = new TreeMap<>();
    if (zk.checkExists().forPath(REGIONS) == null) return m;
    for (String name : zk.getChildren().forPath(REGIONS)) {
      Stat st = new Stat();
      try {
        byte[] data = zk.getData().storingStatIn(st).forPath(REGIONS + "/" + name);
        m.put(name, new Versioned(RegionInfo.decode(name, new String(data, StandardCharsets.UTF_8)), st.getVersion()));
      } catch (KeeperException.NoNodeException gone) {
        // deleted since the listing
      }
    }
    return m;
  }

  /** Creates a region's entry; false when it exists already. */
  public boolean create(RegionInfo info) throws Exception {
    try {
      zk.create().creatingParentsIfNeeded().forPath(REGIONS + "/" + info.name(),
          info.encode().getBytes(StandardCharsets.UTF_8));
      return true;
    } catch (KeeperException.NodeExistsException e) {
      return false;
    }
  }

  /** Replaces a region's entry if it is still at version; false when someone changed it first. */
  public boolean update(RegionInfo info, int version) throws Exception {
    try {
      zk.setData().withVersion(version).forPath(REGIONS + "/" + info.name(),
          info.encode().getBytes(StandardCharsets.UTF_8));
      return true;
    } catch (KeeperException.BadVersionException e) {
      return false;
    }
  }

  /** A primary's report: at epoch, it cannot reach backup server of region. */
  public void suspect(String region, long epoch, String server) throws Exception {
    try {
      zk.create().creatingParentsIfNeeded().forPath(SUSPECTS + "/" + region + "/" + epoch + "-" + server);
    } catch (KeeperException.NodeExistsException e) {
      // reported already
    }
  }

  /** The servers reported unreachable in region at epoch; older reports are deleted. */
  public Set<String> suspects(String region, long epoch) throws Exception {
    Set<String> s = new HashSet<>();
    String dir = SUSPECTS + "/" + region;
    if (zk.checkExists().forPath(dir) == null) return s;
    for (String n : zk.getChildren().forPath(dir)) {
      int dash = n.indexOf('-');
      long e = Long.parseLong(n.substring(0, dash));
      if (e == epoch) s.add(n.substring(dash + 1));
      else if (e < epoch) zk.delete().quietly().forPath(dir + "/" + n);
    }
    return s;
  }

  public LeaderLatch masterLatch(String server) {
    return new LeaderLatch(zk, MASTER, server);
  }

  /** The server the master's election currently puts first ("" while none takes part). */
  public String master() throws Exception {
    return new LeaderLatch(zk, MASTER).getLeader().getId();
  }

  @Override
  public void close() {
    zk.close();
  }
}
