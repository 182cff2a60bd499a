package io.parallaxkv.internal;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * The zero-copy views of a scanner's current entry (FFM backend). {@code par_scanner_key} and
 * {@code par_scanner_value} memory is valid only until the scanner moves or closes, so the views
 * of one entry share a scope that is closed before the scanner moves or closes; reading a view
 * afterwards throws instead of reading freed memory.
 *
 * <p>The scope is confined to the thread that took the first view of the entry (its
 * <em>owner</em>): opening and closing a confined arena costs nanoseconds, where closing a shared
 * one handshakes with every thread of the JVM (~10 µs measured on JDK 25), which would cost more
 * than copying a typical entry. Only the owner can close it, hence the rules:
 * <ul>
 *   <li>{@link #release()} (the scanner is about to move): the owner closes the scope; another
 *       thread cannot, and gets {@link IllegalStateException} while the owner is alive;</li>
 *   <li>{@link #awaitReleased()} (the scanner is about to be freed, from any thread, e.g. by
 *       closing its region): waits, like a call in flight, until the owner releases the views
 *       (its next move or close of the scanner, or of its region or volume), terminates, or drops
 *       every view;</li>
 *   <li>{@link #releaseOwn()} (any close, on the closing thread, before it waits for anything):
 *       ends the closing thread's own views, which a close running on another thread may be
 *       waiting for.</li>
 * </ul>
 * This object holds the scope only weakly. The scope holds the scanner (the {@code keepAlive} of
 * {@link NativeApi#openThreadViewScope}), and this object is reachable from the scanner's close
 * action, which the garbage collector's Cleaner holds: a strong reference would keep an unclosed
 * scanner with views reachable forever. So the views alone keep the scope, and through it the
 * scanner, reachable: an unclosed scanner is not collected (nor its memory freed) while a view is
 * in use, and once every view is gone the scope is cleared and nothing can read the memory.
 */
public final class EntryViews {
  private static final System.Logger LOG = System.getLogger("io.parallaxkv");
  private static final long WARN_EVERY_NANOS = TimeUnit.SECONDS.toNanos(10);
  private static final long GC_EVERY_NANOS = TimeUnit.SECONDS.toNanos(1);

  private final NativeApi api;
  private final String kind;
  // Volatile so that release() can skip the lock on the common path: no views were taken.
  private volatile WeakReference<Object> scope;
  private Thread owner;

  private EntryViews(NativeApi api, String kind) {
    this.api = api;
    this.kind = kind;
  }

  /** Views for {@code kind} ("Scanner of region 'r'"), or null when the backend copies (JNI). */
  public static EntryViews create(NativeApi api, String kind) {
    return api.supportsThreadViews() ? new EntryViews(api, kind) : null;
  }

  private Object open() {
    Object s = scope == null ? null : scope.get();
    if (s == null) owner = null;
    return s;
  }

  /**
   * A read-only view of {@code len} bytes of engine memory at {@code addr}, readable by the
   * calling thread until the next {@link #release()} or {@link #awaitReleased()}. Throws
   * {@link IllegalStateException} while another live thread holds views of the entry.
   */
  public synchronized ByteBuffer view(long addr, int len, Object keepAlive) {
    Thread me = Thread.currentThread();
    Object s = open();
    if (s != null && owner != me) {
      if (owner.isAlive()) throw foreignOwner("take views of its current entry");
      s = null; // a terminated owner can no longer read its views
    }
    if (s == null) {
      s = api.openThreadViewScope(keepAlive);
      scope = new WeakReference<>(s);
      owner = me;
    }
    return api.view(s, addr, len);
  }

  /**
   * Invalidates the current entry's views before the scanner moves. Throws
   * {@link IllegalStateException} (and invalidates nothing) when another live thread owns them.
   * Called under the scanner's lock, like {@link #view}, the only method that opens a scope, so
   * a null {@code scope} read without this object's lock is current.
   */
  public void release() {
    if (scope == null) return;
    synchronized (this) {
      Object s = open();
      if (s == null) return;
      if (owner == Thread.currentThread()) {
        api.closeThreadViewScope(s);
      } else if (owner.isAlive()) {
        throw foreignOwner("move it");
      }
      scope = null;
      owner = null;
    }
  }

  /** Invalidates the views if the calling thread owns them; otherwise does nothing. */
  public synchronized void releaseOwn() {
    Object s = open();
    if (s != null && owner == Thread.currentThread()) {
      api.closeThreadViewScope(s);
      scope = null;
      owner = null;
    }
  }

  /**
   * Returns once no thread can read the views any more, invalidating them if the calling thread
   * owns them; otherwise waits for the owner (see the class comment), logging a warning every
   * 10 seconds so that a stuck close names the thread it waits for.
   */
  public void awaitReleased() {
    long start = System.nanoTime();
    long warned = start;
    long collected = start;
    for (int spins = 0;; spins++) {
      Thread o;
      synchronized (this) {
        Object s = open();
        if (s == null) return;
        if (owner == Thread.currentThread()) {
          api.closeThreadViewScope(s);
          scope = null;
          owner = null;
          return;
        }
        if (!owner.isAlive()) {
          scope = null;
          owner = null;
          return;
        }
        o = owner;
      }
      long now = System.nanoTime();
      if (now - warned >= WARN_EVERY_NANOS) {
        warned = now;
        LOG.log(System.Logger.Level.WARNING, "Parallax: closing " + kind + " has waited "
            + TimeUnit.NANOSECONDS.toSeconds(now - start) + " s for thread '" + o.getName()
            + "' (" + o.getState() + "), which holds views of its current entry, to move or close"
            + " it");
      }
      if (now - collected >= GC_EVERY_NANOS) {
        collected = now; // views dropped without a move only free their scope in a collection
        System.gc();
      }
      if (spins < 100) Thread.onSpinWait();
      else LockSupport.parkNanos(spins < 1000 ? 10_000L : 1_000_000L);
    }
  }

  private IllegalStateException foreignOwner(String what) {
    return new IllegalStateException("cannot " + what + ": thread '" + owner.getName()
        + "' holds views of the current entry of " + kind + ", readable until that thread moves"
        + " or closes it");
  }
}
