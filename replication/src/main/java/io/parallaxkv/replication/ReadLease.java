package io.parallaxkv.replication;

import java.io.Closeable;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A primary answers reads only while it holds this lease, so that a deposed primary that does
 * not know it yet (paused, or cut off from ZooKeeper but not from its clients) cannot answer a
 * read that misses writes its successor acknowledged. Writes need no lease: the successor
 * fenced the backups, which refuse the old primary's records.
 *
 * <p>Why it is safe: the master moves a primary only once that server's ZooKeeper session has
 * expired ({@link Master}), and ZooKeeper expires a session no sooner than its timeout T after
 * it last heard from the client. A renewal is a round trip that finds this server's ephemeral
 * node still owned by its session, so the session was alive when the renewal reached ZooKeeper,
 * after it was sent; the lease runs until T/2 after that send, on this process's monotonic clock.
 * A process paused past the lease finds it lapsed when it resumes, whatever its other threads
 * have not noticed yet. The other T/2 covers the clocks' rates and the master's own delays.
 *
 * <p>Renewed every T/6 on a thread of its own: a renewal or two that come late cost nothing; a
 * server that cannot reach ZooKeeper for T/2 answers reads with {@code NOT_PRIMARY} (clients
 * retry) until it can, or until its session is lost and it exits.
 */
final class ReadLease implements Closeable {
  private static final Logger LOG = LoggerFactory.getLogger(ReadLease.class);

  private final Coordinator coord;
  private final String server;
  private final long leaseNanos, renewMillis;
  private final Thread renewer;
  private volatile long validUntil = System.nanoTime(); // lapsed until the first renewal
  private volatile boolean running = true;

  ReadLease(Coordinator coord, String server) {
    this.coord = coord;
    this.server = server;
    long sessionMs = coord.sessionTimeoutMs();
    this.leaseNanos = TimeUnit.MILLISECONDS.toNanos(sessionMs) / 2;
    this.renewMillis = Math.max(1, sessionMs / 6);
    renewer = new Thread(this::renew, "read-lease");
    renewer.setDaemon(true);
    renewer.start();
  }

  /**
   * Whether this server may answer a read it has made: checked after the read (or after a
   * scanner took its snapshot), so that a pause between the check and the read cannot slip in.
   */
  boolean valid() {
    return validUntil - System.nanoTime() > 0;
  }

  private void renew() {
    while (running) {
      long sent = System.nanoTime();
      try {
        if (coord.ownsServerNode(server)) validUntil = sent + leaseNanos;
      } catch (Exception e) {
        LOG.debug("{}: read lease not renewed: {}", server, e.toString());
      }
      try {
        Thread.sleep(renewMillis);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  @Override
  public void close() {
    running = false;
    renewer.interrupt();
  }
}
