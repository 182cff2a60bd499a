package io.parallaxkv.internal;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.lang.ref.Cleaner;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.LockSupport;

/**
 * The native side of one public handle: its pointer, an in-flight guard, its children and its
 * close action. Public handle objects hold a HandleState; the {@link Cleaner} watches the public
 * object and runs {@link #closeLeaked()} when it is garbage collected without being freed.
 *
 * <p>Guard: every call that passes the pointer to native code runs between {@link #acquire()}
 * and {@link #release()}. {@link #close()} first marks the handle closed (new calls fail with
 * the closed exception), waits for the calls in flight, closes the children, then frees the
 * native object. The in-flight count is striped over padded cells so that threads calling into
 * one region do not contend on one cache line.
 *
 * <p>Failures. A close never stops part-way: every child is closed even when another child's
 * close fails, and their errors are attached, as suppressed exceptions, to the one the close
 * throws. A child whose native object was freed with an error (a region whose last flush failed)
 * is closed for good. A child that cannot be freed yet ({@link Closer#free} threw: a snapshot
 * view in use by an I/O call) keeps its native object, and so does every ancestor, since freeing
 * them would free the memory the child still needs: the handles are closed to callers, the close
 * throws {@link Errors#busy}, and the next close of any of them (or the Cleaner, once the handle
 * is unreachable) tries again. After a close that freed the native object, close does nothing.
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

  /** Frees a handle's native object. */
  public interface Closer {
    /**
     * Frees the native object at {@code ptr}, returning the error the engine reported while
     * closing it (the object is freed all the same), or null. Throws, having freed nothing, when
     * the object cannot be freed safely yet; the exception says why.
     */
    RuntimeException free(long ptr);
  }

  /** The exceptions of the public API that this class throws. */
  public interface Errors {
    /** A call on a closed handle. */
    RuntimeException closed(String message);

    /** A close that could not free the handle yet; see the class comment. */
    RuntimeException busy(String message);

    /** A close that freed the handle, but some of its children's closes failed ({@code first}). */
    RuntimeException failed(String message, RuntimeException first);
  }

  private final long[] cells = new long[(STRIPES + 2) * PAD];
  private volatile boolean closed;
  private boolean done;
  private final String kind;
  private final HandleState parent;
  private final Set<HandleState> children = ConcurrentHashMap.newKeySet();
  private final Closer closer;
  private final Errors errors;
  private final Throwable origin;
  private final Runnable beforeClose;
  private long ptr;
  private Cleaner.Cleanable cleanable;

  /**
   * @param kind     what the handle is ("Region 'users'"), for messages
   * @param ptr      the native pointer
   * @param parent   the handle that must outlive this one, or null
   * @param closer   frees the native object
   * @param alwaysTrack record the creation stack even without {@code -Dparallax.leakTracking}
   */
  public HandleState(String kind, long ptr, HandleState parent, Closer closer, Errors errors,
      boolean alwaysTrack) {
    this(kind, ptr, parent, closer, errors, alwaysTrack, null);
  }

  /**
   * Like the other constructor, plus {@code beforeClose}: run by every {@link #close()} of this
   * handle or of an ancestor, on the closing thread, before that close waits for anything. A
   * scanner releases there the views that thread holds, which a close already running on another
   * thread may be waiting for (without it, the two closes would wait for each other).
   */
  public HandleState(String kind, long ptr, HandleState parent, Closer closer, Errors errors,
      boolean alwaysTrack, Runnable beforeClose) {
    this.beforeClose = beforeClose;
    this.kind = kind;
    this.ptr = ptr;
    this.parent = parent;
    this.closer = closer;
    this.errors = errors;
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
      throw errors.closed(kind + " is closed");
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
   * Closes (see the class comment): concurrent callers wait until the first one is done.
   *
   * @throws RuntimeException the engine's error of this close, with the children's errors
   *     suppressed; {@link Errors#failed} when only children failed; {@link Errors#busy} when the
   *     native object could not be freed yet
   */
  public void close() {
    runBeforeClose();
    RuntimeException e = closeNow();
    if (done && cleanable != null) cleanable.clean(); // runs closeLeaked, which finds it done
    if (e != null) throw e;
  }

  private void runBeforeClose() {
    if (beforeClose != null) beforeClose.run();
    for (HandleState c : children) c.runBeforeClose();
  }

  /** Frees the handle if it can; returns the exception its close must throw, or null. */
  private synchronized RuntimeException closeNow() {
    if (done) return null;
    CLOSED.setVolatile(this, true);
    VarHandle.fullFence();
    for (int spins = 0; inFlight() != 0; spins++) {
      if (spins < 100) Thread.onSpinWait();
      else LockSupport.parkNanos(spins < 1000 ? 10_000L : 1_000_000L);
    }
    List<RuntimeException> childErrors = new ArrayList<>();
    List<String> failed = new ArrayList<>();
    for (HandleState c : new ArrayList<>(children)) {
      try {
        c.close();
      } catch (RuntimeException e) {
        childErrors.add(e);
        failed.add(c.kind);
      }
    }
    RuntimeException error;
    // The children still here: a child whose close failed above may be closed meanwhile by its
    // own thread, so the set is read once (its emptiness and the names must agree).
    List<String> pending = new ArrayList<>();
    for (HandleState c : children) pending.add(c.kind);
    if (!pending.isEmpty()) { // a child keeps its native object: so does this handle
      error = errors.busy(kind + " is closed but not freed, as " + String.join(", ", pending)
          + " could not be freed yet (suppressed); close it again once they can be");
    } else {
      try {
        error = closer.free(ptr);
      } catch (RuntimeException notFreed) {
        for (RuntimeException e : childErrors) notFreed.addSuppressed(e);
        return notFreed;
      }
      ptr = 0;
      done = true;
      if (parent != null) parent.children.remove(this);
      if (error == null && !childErrors.isEmpty()) {
        error = errors.failed(kind + " is closed, but closing " + String.join(", ", failed)
            + " failed (suppressed)", childErrors.get(0));
      }
    }
    for (RuntimeException e : childErrors) error.addSuppressed(e);
    return error;
  }

  private void closeLeaked() {
    synchronized (this) {
      if (done) return;
    }
    StringBuilder sb = new StringBuilder();
    sb.append("Parallax: ").append(kind).append(closed ? " was closed but not freed" : " was not closed")
        .append("; the garbage collector closes it");
    if (origin == null) {
      sb.append(" (run with -Dparallax.leakTracking=true to record where handles are created)");
    }
    LOG.log(System.Logger.Level.WARNING, sb.toString(), origin);
    RuntimeException e = closeNow();
    if (e != null) {
      LOG.log(System.Logger.Level.WARNING, "Parallax: closing " + kind + " failed"
          + (done ? "" : "; its native memory stays allocated"), e);
    }
  }
}
