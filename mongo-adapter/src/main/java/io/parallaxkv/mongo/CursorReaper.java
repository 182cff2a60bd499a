package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.CursorRegistry;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * The open {@link StreamingCursor}s, and MongoDB's cursor timeout: a cursor idle longer than
 * {@code timeoutMillis} (MongoDB's {@code cursorTimeoutMillis}, 10 minutes by default) is removed
 * from the library's registry and closed, which releases its engine snapshot. Killed cursors are
 * closed at once ({@link #kill}).
 */
final class CursorReaper implements AutoCloseable {
  /** System property of the timeout in milliseconds. */
  static final String TIMEOUT_PROPERTY = "parallax.mongo.cursorTimeoutMillis";
  static final long DEFAULT_TIMEOUT_MILLIS = 600_000;

  private final CursorRegistry registry;
  private final long timeoutNanos;
  private final Map<Long, StreamingCursor> open = new ConcurrentHashMap<>();
  private final ScheduledExecutorService timer;

  CursorReaper(CursorRegistry registry, long timeoutMillis) {
    this.registry = registry;
    this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "parallax-mongo-cursor-timeout");
      t.setDaemon(true);
      return t;
    });
    long period = Math.max(10, Math.min(timeoutMillis / 4, 60_000));
    timer.scheduleWithFixedDelay(this::expire, period, period, TimeUnit.MILLISECONDS);
  }

  static long timeoutFromProperty() {
    return Long.getLong(TIMEOUT_PROPERTY, DEFAULT_TIMEOUT_MILLIS);
  }

  /** Registers a new cursor with the library (for getMore) and here (for timeouts and kills). */
  void add(StreamingCursor cursor) {
    open.put(cursor.getId(), cursor);
    registry.add(cursor);
  }

  void forget(StreamingCursor cursor) {
    open.remove(cursor.getId());
  }

  /**
   * Refuses, with MongoDB's error 13 (Unauthorized), a getMore or killCursors ({@code command},
   * body {@code query}) sent on database {@code db} by {@code requester} ({@link
   * Authenticator#cursorOwner}) that names an open cursor it may not use, as MongoDB does:
   *
   * <ul>
   *   <li>a cursor opened by another user: a getMore is refused whatever the requester's roles;
   *       a killCursors is refused as a whole (nothing is killed) unless {@code mayKillAny}
   *       (MongoDB's {@code killAnyCursor}, of {@code root} and {@code clusterAdmin});
   *   <li>a cursor of another namespace: the request's database is what roles are checked
   *       against, so a cursor is read or killed only through its own namespace.
   * </ul>
   *
   * Ids of no open cursor pass: the library answers them (error 43, or {@code cursorsNotFound}).
   */
  void checkAccess(String db, String command, Document query, String requester,
      boolean mayKillAny) {
    boolean getMore = command.equalsIgnoreCase("getMore");
    String namespace = db + "." + query.get(getMore ? "collection" : "killCursors");
    List<?> ids = getMore ? List.of(query.get("getMore"))
        : query.get("cursors") instanceof List<?> l ? l : List.of();
    for (Object id : ids) {
      StreamingCursor cursor = id instanceof Number n ? open.get(n.longValue()) : null;
      if (cursor == null) continue;
      boolean othersCursor = cursor.owner() != null && !cursor.owner().equals(requester);
      if (othersCursor && (getMore || !mayKillAny)) {
        throw new MongoServerError(13, "Unauthorized", "cursor id " + id
            + " was not created by the authenticated user");
      }
      if (!cursor.namespace().equals(namespace)) {
        throw new MongoServerError(13, "Unauthorized", "Requested " + command + " on namespace '"
            + namespace + "', but cursor " + id + " belongs to a different namespace "
            + cursor.namespace());
      }
    }
  }

  /** Closes a cursor named by killCursors (the library then drops it from its registry). */
  void kill(long cursorId) {
    StreamingCursor cursor = open.get(cursorId);
    if (cursor != null) cursor.close();
  }

  /** Open cursors (for tests). */
  int openCount() {
    return open.size();
  }

  StreamingCursor get(long cursorId) {
    return open.get(cursorId);
  }

  private void expire() {
    long now = System.nanoTime();
    for (StreamingCursor cursor : open.values()) {
      if (cursor.idleNanos(now) > timeoutNanos) {
        registry.remove(cursor.getId());
        cursor.close();
      }
    }
  }

  /** Closes every cursor (before the volume closes). */
  @Override
  public void close() {
    timer.shutdownNow();
    for (StreamingCursor cursor : open.values()) {
      registry.remove(cursor.getId());
      cursor.close();
    }
  }
}
