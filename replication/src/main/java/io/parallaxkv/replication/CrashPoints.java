package io.parallaxkv.replication;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Test fault injection, off unless {@code -Dparallax.repl.crashAt=POINT:N} is given: the process
 * halts (as {@code kill -9} would stop it: no shutdown hook, nothing flushed) the N-th time it
 * reaches POINT. The points sit inside the protocol's steps, where a crash is hardest to survive.
 */
final class CrashPoints {
  /** A primary sent shipped records and has not seen the backup's answer. */
  static final String PRIMARY_MID_LOG = "primary-mid-log";
  /** A primary sent part of a level's segments to a backup. */
  static final String PRIMARY_MID_INDEX = "primary-mid-index";
  /** A backup copied a shipped segment; the install is not committed. */
  static final String BACKUP_MID_INSTALL = "backup-mid-install";

  private static final String POINT;
  private static final int AT;
  private static final AtomicInteger REACHED = new AtomicInteger();

  static {
    String spec = System.getProperty("parallax.repl.crashAt", "");
    int colon = spec.lastIndexOf(':');
    POINT = colon > 0 ? spec.substring(0, colon) : null;
    AT = colon > 0 ? Integer.parseInt(spec.substring(colon + 1)) : 0;
  }

  private CrashPoints() {}

  static void reach(String point) {
    if (point.equals(POINT) && REACHED.incrementAndGet() == AT) {
      System.err.println("crash point " + point + " reached: halting");
      Runtime.getRuntime().halt(9);
    }
  }
}
