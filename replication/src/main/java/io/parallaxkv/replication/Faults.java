package io.parallaxkv.replication;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test fault injection, off unless asked for:
 *
 * <ul>
 *   <li>{@code -Dparallax.repl.crashAt=POINT:N}: the process halts (as {@code kill -9} would stop
 *       it: no shutdown hook, nothing flushed) the N-th time it reaches POINT. The points sit
 *       inside the protocol's steps, where a crash is hardest to survive.
 *   <li>{@code -Dparallax.repl.partition=FROM_MS:DURATION_MS}: from the wall-clock time FROM_MS
 *       (milliseconds since the epoch) and for DURATION_MS, this server is cut off from every
 *       peer and client (its connections are dropped, its calls fail) but not from ZooKeeper: a
 *       network partition that ZooKeeper does not see. With {@code :outbound} after it, only this server's own
 *       calls fail (a primary cannot reach its backups) while clients still reach it. The time is
 *       absolute so that a test knows to the millisecond when the cut begins and ends; a start
 *       counted from the process's start had to be guessed from outside, and the guess was late
 *       by enough, on a loaded machine, to count writes acknowledged after the heal as made
 *       during the cut.
 * </ul>
 */
final class Faults {
  /** A primary sent shipped records and has not seen the backup's answer. */
  static final String PRIMARY_MID_LOG = "primary-mid-log";
  /** A primary sent part of a level's segments to a backup. */
  static final String PRIMARY_MID_INDEX = "primary-mid-index";
  /** A backup copied a shipped segment; the install is not committed. */
  static final String BACKUP_MID_INSTALL = "backup-mid-install";
  /** A backup committed an install (its catalog record is durable) and has not answered. */
  static final String BACKUP_INSTALL_COMMITTED = "backup-install-committed";
  /** A backup made its copy the primary (the engine replayed its log) and does not serve yet. */
  static final String BACKUP_PROMOTED = "backup-promoted";
  /** The master fenced a failed region's backups at the new epoch and has not written the map. */
  static final String MASTER_FENCED = "master-fenced";

  private static final String POINT;
  private static final int AT;
  private static final AtomicInteger REACHED = new AtomicInteger();
  private static final long CUT_FROM, CUT_TO;
  private static final boolean CUT_INBOUND;

  static {
    String spec = System.getProperty("parallax.repl.crashAt", "");
    int colon = spec.lastIndexOf(':');
    POINT = colon > 0 ? spec.substring(0, colon) : null;
    AT = colon > 0 ? Integer.parseInt(spec.substring(colon + 1)) : 0;
    String[] cut = System.getProperty("parallax.repl.partition", "").split(":");
    CUT_FROM = cut.length >= 2 ? Long.parseLong(cut[0]) : 0;
    CUT_TO = cut.length >= 2 ? CUT_FROM + Long.parseLong(cut[1]) : 0;
    CUT_INBOUND = cut.length < 3 || !cut[2].equals("outbound");
  }

  private Faults() {}

  /** Whether this server's calls to others fail now (a partition of either kind). */
  static boolean callsCut() {
    long now = System.currentTimeMillis();
    return now >= CUT_FROM && now < CUT_TO;
  }

  /** Whether connections to this server are dropped now (a full partition only). */
  static boolean connectionsCut() {
    return CUT_INBOUND && callsCut();
  }

  static void reach(String point) {
    if (point.equals(POINT) && REACHED.incrementAndGet() == AT) {
      System.err.println("crash point " + point + " reached: halting");
      Runtime.getRuntime().halt(9);
    }
  }
}
