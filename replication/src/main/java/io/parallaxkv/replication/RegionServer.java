package io.parallaxkv.replication;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Replication;
import io.parallaxkv.Scanner;
import io.parallaxkv.replication.RegionInfo.Member;
import java.io.Closeable;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A region server: one volume holding its copies of regions, a {@link Transport} endpoint, its
 * membership in ZooKeeper and a chance to be the {@link Master}. It follows the region map
 * (polled every 100 ms): it makes, promotes and drops its copies as the map says, runs the
 * primary side ({@link PrimaryRegion}) of the regions it leads and answers the backup side
 * ({@link LocalCopy}) of the others.
 *
 * <p>A server whose ZooKeeper session is lost exits: its membership, and every role it had, are
 * gone, and the master has moved them on. It starts again as a new member with an empty volume.
 */
public final class RegionServer implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(RegionServer.class);
  private static final long WRITE_TIMEOUT_MS = 5000;
  /** The most bytes of pairs a scan's page holds (one pair larger than this goes alone). */
  static final long SCAN_PAGE_MAX = 16 << 20;

  /** Server settings. */
  public record Config(String zk, Path dir, String host, int port, int rf, int regions,
      boolean sendIndex, boolean hybrid, int sessionTimeoutMs, long l0Size, long indexIntervalMs, boolean syncWrites) {}

  private final Config cfg;
  private final String self;
  private final Parallax volume;
  private final Transport transport = new NettyTransport();
  private final Peers peers = new Peers(transport);
  private final Coordinator coord;
  private final ReadLease lease;
  private final Master master;
  private final Closeable endpoint;
  private final Map<String, LocalCopy> copies = new ConcurrentHashMap<>();
  private final Map<String, PrimaryRegion> primaries = new ConcurrentHashMap<>();
  private volatile Map<String, Coordinator.Versioned> map = Map.of();
  /* Client requests and the long replication requests (installs, loads) on pools of their own,
   * neither queued behind the other ({@link #handle}). */
  private final ExecutorService clientWorkers = Executors.newFixedThreadPool(16, named("client-worker-"));
  private final ExecutorService replicationWorkers = Executors.newFixedThreadPool(4, named("repl-worker-"));
  private final Thread follower;
  private volatile boolean running = true;

  public RegionServer(Config cfg) throws Exception {
    this.cfg = cfg;
    this.self = cfg.host() + ":" + cfg.port();
    java.nio.file.Files.createDirectories(cfg.dir());
    java.nio.file.Files.deleteIfExists(cfg.dir().resolve("copies.vol")); // a new member starts empty
    volume = Parallax.open(cfg.dir().resolve("copies.vol"), Options.builder()
        .placement(cfg.hybrid() ? Options.Placement.HYBRID : Options.Placement.IN_PLACE)
        .l0Size(cfg.l0Size()).build());
    endpoint = transport.listen(cfg.host(), cfg.port(), this::handle);
    coord = new Coordinator(cfg.zk(), cfg.sessionTimeoutMs());
    coord.onSessionLost(() -> {
      LOG.error("{}: ZooKeeper session lost: exiting (the master has moved this server's roles on)", self);
      Runtime.getRuntime().halt(3);
    });
    coord.register(self);
    lease = new ReadLease(coord, self);
    master = new Master(coord, peers, self, cfg.rf(), cfg.regions());
    follower = new Thread(this::follow, "map-follower");
    follower.setDaemon(true);
    follower.start();
  }

  /** Pool threads named by their job, as jstack, top -H and ReplicationBench's CPU report show them. */
  private static ThreadFactory named(String prefix) {
    AtomicInteger n = new AtomicInteger();
    return r -> new Thread(r, prefix + n.incrementAndGet());
  }

  public String id() {
    return self;
  }

  // ---- following the region map -----------------------------------------------------------

  private void follow() {
    while (running) {
      try {
        map = coord.regions();
        for (Coordinator.Versioned v : map.values()) reconcile(v.info());
        for (String name : new ArrayList<>(copies.keySet())) {
          if (!map.containsKey(name)) dropCopy(name);
        }
        Thread.sleep(100);
      } catch (InterruptedException e) {
        return;
      } catch (Exception e) {
        LOG.warn("{}: following the map: {}", self, e.toString());
      }
    }
  }

  private void reconcile(RegionInfo r) {
    Member me = r.member(self);
    LocalCopy copy = copies.get(r.name());
    if (me == null) {
      if (copy != null) dropCopy(r.name());
      return;
    }
    boolean primary = r.primary().server().equals(self);
    if (copy == null || copy.joinEpoch != me.joinEpoch()) {
      if (copy != null) dropCopy(r.name());
      // A new member starts empty: the primary of a new region, or a backup to transfer to.
      boolean fresh = me.joinEpoch() == 1 && r.epoch() == 1;
      if (primary && !fresh) {
        LOG.error("{}: primary of {} without its copy", self, r.name());
        return;
      }
      copy = new LocalCopy(volume, r.name(), me.joinEpoch(), primary, cfg.sendIndex(), me.complete(), r.epoch());
      copies.put(r.name(), copy);
    }
    if (primary) {
      PrimaryRegion p = primaries.get(r.name());
      if (p == null) {
        copy.promote(r.epoch());
        p = new PrimaryRegion(copy, peers, cfg.sendIndex(), cfg.indexIntervalMs(), cfg.syncWrites(), coord::suspect);
        primaries.put(r.name(), p);
        LOG.info("{}: primary of {} at epoch {}", self, r.name(), r.epoch());
      }
      p.update(r);
    }
  }

  private void dropCopy(String name) {
    PrimaryRegion p = primaries.remove(name);
    if (p != null) p.close();
    LocalCopy c = copies.remove(name);
    if (c != null) c.drop();
    LOG.info("{}: dropped its copy of {}", self, name);
  }

  // ---- requests ---------------------------------------------------------------------------

  /**
   * Serves a request. Shipped records ({@code APPLY}) are applied on the transport's thread that
   * received them: an apply never waits for another server and takes microseconds, and handing
   * each message to a worker and its answer back cost a backup a fifth of its CPU per write
   * (docs/replication.md, Benchmarks). An apply waits for its copy's lock, which an install's
   * commit, a load or a promotion holds for milliseconds to seconds: those calls do no network
   * I/O under it, so that wait delays the loop's other connections but cannot deadlock them.
   * Client requests run on their own pool; a write's answer is sent once its backups hold it
   * ({@link PrimaryRegion#write}), by the thread that learns so, while the worker goes on. The
   * other replication requests (installs, loads) run on a pool of their own, never behind client
   * requests, nor client requests behind them.
   */
  private CompletableFuture<Frame> handle(Frame req) {
    if (req.type() == Frame.Type.APPLY) {
      try {
        return CompletableFuture.completedFuture(serve(req));
      } catch (Exception e) {
        return CompletableFuture.completedFuture(failure(req, e));
      }
    }
    CompletableFuture<Frame> f = new CompletableFuture<>();
    boolean client = req.type() == Frame.Type.WRITE || req.type() == Frame.Type.GET || req.type() == Frame.Type.SCAN;
    (client ? clientWorkers : replicationWorkers).execute(() -> {
      try {
        if (req.type() == Frame.Type.WRITE) {
          write(req).whenComplete((ok, e) -> f.complete(e == null ? ok : failure(req, e)));
        } else {
          f.complete(serve(req));
        }
      } catch (Exception e) {
        f.complete(failure(req, e));
      }
    });
    return f;
  }

  /** The answer to req that failed with e. */
  private static Frame failure(Frame req, Throwable e) {
    if (e instanceof CompletionException && e.getCause() != null) e = e.getCause();
    if (e instanceof LocalCopy.StaleEpochException stale) { // with the epoch the copy is at
      return req.reply(Frame.Status.STALE_EPOCH, stale.seen, null, e.getMessage().getBytes(StandardCharsets.UTF_8));
    }
    if (e instanceof PrimaryRegion.DeposedException) return req.fail(Frame.Status.STALE_EPOCH, e.getMessage());
    if (e instanceof TimeoutException) {
      return req.fail(Frame.Status.UNAVAILABLE, "write not replicated in " + WRITE_TIMEOUT_MS + " ms");
    }
    if (e instanceof IllegalArgumentException || e instanceof io.parallaxkv.InvalidArgumentException
        || e instanceof io.parallaxkv.CorruptionException) {
      return req.fail(Frame.Status.BAD_REQUEST, e.getMessage());
    }
    return req.fail(Frame.Status.ERROR, e.toString());
  }

  /** A client write: answered once every backup of the ack set holds it. */
  private CompletableFuture<Frame> write(Frame req) throws PrimaryRegion.DeposedException {
    if (req.a().length == 0) throw new IllegalArgumentException("empty key");
    PrimaryRegion p = primaryFor(req.a());
    if (p == null) {
      return CompletableFuture.completedFuture(req.fail(Frame.Status.NOT_PRIMARY, self + " is not the primary of that key"));
    }
    return p.write(req.a(), req.b(), req.num() == 1, WRITE_TIMEOUT_MS).thenApply(v -> req.ok(0));
  }

  private LocalCopy backupCopy(Frame req) {
    LocalCopy c = copies.get(req.region());
    if (c == null) throw new IllegalArgumentException(self + " has no copy of region '" + req.region() + "'");
    return c;
  }

  private PrimaryRegion primaryFor(byte[] key) {
    for (Coordinator.Versioned v : map.values()) {
      if (v.info().contains(key)) {
        PrimaryRegion p = primaries.get(v.info().name());
        return p != null && v.info().primary().server().equals(self) ? p : null;
      }
    }
    return null;
  }

  private Frame serve(Frame req) throws Exception {
    switch (req.type()) {
      case GET: {
        if (req.a().length == 0) throw new IllegalArgumentException("empty key");
        PrimaryRegion p = primaryFor(req.a());
        if (p == null) return req.fail(Frame.Status.NOT_PRIMARY, self + " is not the primary of that key");
        byte[] v = p.region().get(req.a());
        // Checked after the read (ReadLease): a lease valid now was valid when the read was made.
        if (!lease.valid()) return req.fail(Frame.Status.NOT_PRIMARY, self + " has no read lease");
        return v == null ? req.reply(Frame.Status.NOT_FOUND, 0, null, null) : req.reply(Frame.Status.OK, 0, null, v);
      }
      case SCAN: {
        PrimaryRegion p = primaries.get(req.region());
        if (p == null) return req.fail(Frame.Status.NOT_PRIMARY, self + " is not the primary of " + req.region());
        List<byte[][]> pairs = new ArrayList<>();
        long limit = Math.max(0, Math.min(req.num(), SCAN_PAGE_MAX)), bytes = 0;
        boolean more;
        try (Scanner s = p.region().scanner()) {
          // The scanner reads one snapshot, taken when it opened: the lease is checked after that.
          if (!lease.valid()) return req.fail(Frame.Status.NOT_PRIMARY, self + " has no read lease");
          more = req.a().length == 0 ? s.seekToFirst() : s.seekAfter(req.a());
          for (; more; more = s.next()) {
            long size = 8L + s.keyLength() + s.valueLength();
            if (!pairs.isEmpty() && bytes + size > limit) break;
            pairs.add(new byte[][] {s.key(), s.value()});
            bytes += size;
          }
        }
        return req.reply(Frame.Status.OK, more ? 1 : 0, Pairs.encode(pairs), null);
      }
      case APPLY: {
        LocalCopy c = backupCopy(req);
        long lsn = c.apply(req.epoch(), req.a());
        return req.reply(Frame.Status.OK, lsn, new byte[] {(byte) (c.complete() ? 1 : 0)}, null);
      }
      case INSTALL_BEGIN:
        return req.reply(Frame.Status.OK, 0, backupCopy(req).installBegin(req.epoch(), req.num(), req.a()), null);
      case INSTALL_SEGMENT:
        if (req.a().length == 0 || req.a().length > Replication.SEGMENT_SIZE) {
          throw new IllegalArgumentException("a segment's bytes must be 1 B to 2 MiB, not " + req.a().length);
        }
        if (req.b().length != 4) throw new IllegalArgumentException("a segment's number takes 4 bytes");
        backupCopy(req).installSegment(req.epoch(), req.num(), ByteBuffer.wrap(req.b()).getInt(), req.a());
        return req.ok(0);
      case INSTALL_COMMIT:
        return req.ok(backupCopy(req).installCommit(req.epoch(), req.num()));
      case MARK_COMPLETE:
        backupCopy(req).markComplete(req.epoch());
        return req.ok(0);
      case LOAD_BEGIN:
        backupCopy(req).loadBegin(req.epoch(), req.num());
        return req.ok(0);
      case LOAD:
        backupCopy(req).load(req.epoch(), req.num(), Pairs.decode(req.a()));
        return req.ok(0);
      case LOAD_COMMIT:
        if (req.a().length != 8) throw new IllegalArgumentException("a load's LSN takes 8 bytes");
        return req.ok(backupCopy(req).loadCommit(req.epoch(), req.num(), ByteBuffer.wrap(req.a()).getLong()));
      case FENCE: {
        long[] r = backupCopy(req).fence(req.epoch());
        return req.reply(Frame.Status.OK, r[0], new byte[] {(byte) r[1]}, null);
      }
      case STATS: {
        LocalCopy c = backupCopy(req);
        Replication.Stats s = Replication.stats(c.region());
        long[] received = c.received();
        ByteBuffer b = ByteBuffer.allocate(15 * 8);
        b.putLong(s.role().ordinal()).putLong(s.logLsn()).putLong(s.l0Lsn()).putLong(s.coveredLsn())
            .putLong(s.recordsApplied()).putLong(s.recordsSkipped()).putLong(s.treesInstalled())
            .putLong(s.segmentsInstalled()).putLong(s.compactions()).putLong(s.mirrorBytes())
            .putLong(s.mediumSegments()).putLong(s.segmentBytes()).putLong(received[0]).putLong(received[1])
            .putLong(received[2]);
        return req.reply(Frame.Status.OK, c.complete() ? 1 : 0, b.array(), null);
      }
      default:
        throw new IllegalArgumentException("unexpected message " + req.type());
    }
  }

  @Override
  public void close() {
    running = false;
    follower.interrupt();
    lease.close();
    master.close();
    primaries.values().forEach(PrimaryRegion::close);
    try {
      endpoint.close();
      clientWorkers.shutdownNow();
      replicationWorkers.shutdownNow();
      copies.values().forEach(LocalCopy::close);
      volume.close();
      peers.close();
      coord.close();
      transport.close();
    } catch (Exception e) {
      LOG.warn("{}: close: {}", self, e.toString());
    }
  }
}
