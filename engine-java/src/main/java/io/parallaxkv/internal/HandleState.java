package io.parallaxkv.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongUnaryOperator;

/**
 * The native side of one public handle: its pointer, an in-flight guard, its children and its
 * close action. Public handle objects hold a HandleState; the {@link Cleaner} watches the public
 * object and runs {@link #closeLeaked()} when it is garbage collected without being closed.
 *
 * <p>Guard: every call that passes the pointer to native code runs between {@link #acquire()}
 * and {@link #release()}. {@link #close()} first marks the handle closed (new calls fail with
 * the closed exception), waits for the calls in flight, closes the children, then frees the
 * native object. The in-flight count is striped over padded cells so that threads calling into
 * one region do not contend on one cache line.
 */
public final class HandleState {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final System.Logger LOG = System.getLogger("io.parallaxkv");
  private static final boolean TRACK_ALL = Boolean.getBoolean("parallax.leakTracking");

  private static final int STRIPES = 16; // power of two
  private static final int PAD = 8;      // longs per cell: 64 bytes
  private static final VarHandle CELLS = MethodHandles.arrayElementVarHandle(long[].class);
  private static final VarHandle CLOSED;

  static {
    try {
      CLOSED = MethodHandles.lookup().findVarHandle(HandleState.class, "closed", boolean.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }

  /** Creates the exception thrown when a closed handle is used. */
  public interface ClosedError {
    RuntimeException create(String what);
  }

  private final long[] cells = new long[(STRIPES + 2) * PAD];
  private volatile boolean closed;
  private boolean done;
  private final String kind;
  private final HandleState parent;
  private final Set<HandleState> children = ConcurrentHashMap.newKeySet();
  private final LongUnaryOperator closer;
  private final ClosedError closedError;
  private final Throwable origin;
  private final Runnable beforeClose;
  private long ptr;
  private Cleaner.Cleanable cleanable;

  /**
   * @param kind     what the handle is ("Region 'users'"), for messages
   * @param ptr      the native pointer
   * @param parent   the handle that must outlive this one, or null
   * @param closer   frees the native object, returning a status (0 or negative)
   * @param alwaysTrack record the creation stack even without {@code -Dparallax.leakTracking}
   */
  public HandleState(String kind, long ptr, HandleState parent, LongUnaryOperator closer,
      ClosedError closedError, boolean alwaysTrack) {
    this(kind, ptr, parent, closer, closedError, alwaysTrack, null);
  }

  /**
   * Like the other constructor, plus {@code beforeClose}: run by every {@link #close()} of this
   * handle or of an ancestor, on the closing thread, before that close waits for anything. A
   * scanner releases there the views that thread holds, which a close already running on another
   * thread may be waiting for (without it, the two closes would wait for each other).
   */
  public HandleState(String kind, long ptr, HandleState parent, LongUnaryOperator closer,
      ClosedError closedError, boolean alwaysTrack, Runnable beforeClose) {
    this.beforeClose = beforeClose;
    this.kind = kind;
    this.ptr = ptr;
    this.parent = parent;
    this.closer = closer;
    this.closedError = closedError;
    this.origin = alwaysTrack || TRACK_ALL ? new Throwable(kind + " created here") : null;
  }

  /** Registers {@code owner} (the public handle) with the Cleaner and the parent. */
  public void register(Object owner) {
    this.cleanable = CLEANER.register(owner, this::closeLeaked);
    if (parent != null) parent.children.add(this);
  }

  /** What this handle is, for messages. */
  public String kind() {
    return kind;
  }

  private int stripe() {
    return ((int) Thread.currentThread().getId() & (STRIPES - 1)) * PAD + PAD;
  }

  /**
   * Enters a native call: returns the pointer, or throws the closed exception. Every successful
   * acquire must be paired with {@link #release()} on the same thread.
   */
  public long acquire() {
    int i = stripe();
    CELLS.getAndAdd(cells, i, 1L);
    if (closed) {
      CELLS.getAndAdd(cells, i, -1L);
      throw closedError.create(kind + " is closed");
    }
    return ptr;
  }

  /** Leaves a native call. */
  public void release() {
    CELLS.getAndAdd(cells, stripe(), -1L);
  }

  /** True once close has started. */
  public boolean isClosed() {
    return closed;
  }

  private long inFlight() {
    long n = 0;
    for (int i = PAD; i < (STRIPES + 1) * PAD; i += PAD) n += (long) CELLS.getVolatile(cells, i);
    return n;
  }

  /**
   * Closes: idempotent; concurrent callers wait until the first one is done. Returns the native
   * close status (0 if this call did not close).
   */
  public int close() {
    runBeforeClose();
    int rc = closeNow();
    if (cleanable != null) cleanable.clean(); // runs closeLeaked, which finds it done
    return rc;
  }

  private void runBeforeClose() {
    if (beforeClose != null) beforeClose.run();
    for (HandleState c : children) c.runBeforeClose();
  }

  private synchronized int closeNow() {
    if (done) return 0;
    CLOSED.setVolatile(this, true);
    VarHandle.fullFence();
    for (int spins = 0; inFlight() != 0; spins++) {
      if (spins < 100) Thread.onSpinWait();
      else LockSupport.parkNanos(spins < 1000 ? 10_000L : 1_000_000L);
    }
    for (HandleState c : new ArrayList<>(children)) c.close();
    long p = ptr;
    ptr = 0;
    done = true;
    int rc = 0;
    try {
      if (p != 0) rc = (int) closer.applyAsLong(p);
    } finally {
      if (parent != null) parent.children.remove(this);
    }
    return rc;
  }

  private void closeLeaked() {
    synchronized (this) {
      if (done) return;
    }
    StringBuilder sb = new StringBuilder();
    sb.append("Parallax: ").append(kind).append(" was not closed; the garbage collector closes it");
    if (origin == null) {
      sb.append(" (run with -Dparallax.leakTracking=true to record where handles are created)");
    }
    LOG.log(System.Logger.Level.WARNING, sb.toString(), origin);
    try {
      int rc = closeNow();
      if (rc < 0) LOG.log(System.Logger.Level.WARNING, "Parallax: closing " + kind + " failed: " + rc);
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, "Parallax: closing " + kind + " failed", e);
    }
  }
}
