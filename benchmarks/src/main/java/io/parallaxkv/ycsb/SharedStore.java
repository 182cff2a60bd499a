package io.parallaxkv.ycsb;

import java.util.HashMap;
import java.util.Map;
import java.util.function.Supplier;

/**
 * One open store per (engine, directory) for the whole JVM. YCSB creates a {@link KvClient} per
 * client thread, but an engine directory can be opened only once, and the threads must share
 * one engine to measure it: the first {@link #acquire} opens the store, later ones share it, and
 * the {@link #release} that drops the count to zero closes it. The phase meter's window is the
 * same: from the first open to the last close.
 */
final class SharedStore {
  private static final Map<String, Entry> OPEN = new HashMap<>();

  private static final class Entry {
    final KvStore store;
    int refs;

    Entry(KvStore store) {
      this.store = store;
    }
  }

  private SharedStore() {}

  /** The store registered under {@code id}, opened with {@code opener} if none is. */
  static synchronized KvStore acquire(String id, Supplier<KvStore> opener) {
    Entry e = OPEN.get(id);
    if (e == null) {
      PhaseMeter.begin();
      e = new Entry(opener.get());
      OPEN.put(id, e);
    }
    e.refs++;
    return e.store;
  }

  /** Drops one reference; the last one closes the store and ends the phase meter's window. */
  static synchronized void release(String id) {
    Entry e = OPEN.get(id);
    if (e == null) throw new IllegalStateException("store " + id + " is not open");
    if (--e.refs > 0) return;
    OPEN.remove(id);
    Map<String, String> stats = e.store.stats();
    PhaseMeter.beforeClose();
    e.store.close();
    PhaseMeter.end(stats);
  }

  /** How many clients share the store {@code id} (0 if it is closed). */
  static synchronized int refs(String id) {
    Entry e = OPEN.get(id);
    return e == null ? 0 : e.refs;
  }
}
