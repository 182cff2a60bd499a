package io.parallaxkv.ycsb;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.Vector;
import java.util.concurrent.atomic.AtomicInteger;
import site.ycsb.ByteIterator;
import site.ycsb.DB;
import site.ycsb.DBException;
import site.ycsb.Status;

/**
 * The part of the YCSB bindings that is the same for every engine: records are encoded into one
 * value with {@link FieldCodec}, keys are the UTF-8 bytes of YCSB's key, the YCSB table name is
 * ignored (one keyspace per directory), and all client threads of a JVM share one open store
 * per directory ({@link SharedStore}).
 *
 * <p>Property {@code kv.update} (every binding): {@code merge} (default) gives YCSB's update
 * semantics, the named fields replace those of the stored record and the others stay, at the
 * price of a read before each write; {@code replace} writes the given fields as the whole
 * record, which is the same thing when records have one field (as {@link MixWorkload}'s do)
 * and costs no read. Application bytes are counted for {@link PhaseMeter}.
 */
public abstract class KvClient extends DB {
  /** Property selecting the update semantics: {@code merge} or {@code replace}. */
  public static final String UPDATE_PROPERTY = "kv.update";

  private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
  private static final AtomicInteger CLIENTS = new AtomicInteger();

  private String id;
  private KvStore store;
  private boolean merge;
  private long startCpu;
  private long startUser;
  private String threadName;

  /** A short engine name, part of the shared store's identity. */
  protected abstract String engine();

  /** The directory property of this binding (e.g. {@code parallax.dir}). */
  protected abstract String dirProperty();

  /** Opens the store in {@code dir} (called once per directory and JVM). */
  protected abstract KvStore open(Path dir, Properties p) throws DBException;

  @Override
  public void init() throws DBException {
    Properties p = getProperties();
    String dir = p.getProperty(dirProperty());
    if (dir == null || dir.isBlank()) throw new DBException("property " + dirProperty() + " is required");
    String mode = p.getProperty(UPDATE_PROPERTY, "merge").toLowerCase(Locale.ROOT);
    if (!mode.equals("merge") && !mode.equals("replace")) {
      throw new DBException(UPDATE_PROPERTY + " must be merge or replace, not " + mode);
    }
    merge = mode.equals("merge");
    // YCSB calls init and cleanup on the client's own thread: name it for the phase's profile
    // (PhaseMeter) and count its CPU from here.
    threadName = Thread.currentThread().getName();
    Thread.currentThread().setName(PhaseMeter.CLIENT_THREAD + "-" + CLIENTS.incrementAndGet());
    startCpu = THREADS.getCurrentThreadCpuTime();
    startUser = THREADS.getCurrentThreadUserTime();
    Path path = Path.of(dir).toAbsolutePath().normalize();
    id = engine() + ":" + path;
    try {
      store = SharedStore.acquire(id, () -> {
        try {
          return open(path, p);
        } catch (DBException e) {
          throw new IllegalStateException(e.getMessage(), e);
        }
      });
    } catch (RuntimeException e) {
      throw new DBException("cannot open " + engine() + " in " + path + ": " + e.getMessage(), e);
    }
  }

  @Override
  public void cleanup() throws DBException {
    if (store == null) return;
    store = null;
    PhaseMeter.clientDone(THREADS.getCurrentThreadCpuTime() - startCpu,
        THREADS.getCurrentThreadUserTime() - startUser);
    try {
      SharedStore.release(id);
    } catch (RuntimeException e) {
      throw new DBException("closing " + engine() + ": " + e.getMessage(), e);
    } finally {
      Thread.currentThread().setName(threadName);
    }
  }

  private static byte[] key(String key) {
    return key.getBytes(StandardCharsets.UTF_8);
  }

  @Override
  public Status read(String table, String key, Set<String> fields, Map<String, ByteIterator> result) {
    try {
      byte[] v = store.get(key(key));
      if (v == null) return Status.NOT_FOUND;
      PhaseMeter.returned(v.length);
      FieldCodec.decode(v, fields, result);
      return Status.OK;
    } catch (RuntimeException e) {
      return error("read", e);
    }
  }

  @Override
  public Status scan(String table, String startkey, int recordcount, Set<String> fields,
      Vector<HashMap<String, ByteIterator>> result) {
    try {
      store.scan(key(startkey), recordcount, (k, v) -> {
        PhaseMeter.returned(k.length + v.length);
        HashMap<String, ByteIterator> row = new HashMap<>();
        FieldCodec.decode(v, fields, row);
        result.add(row);
      });
      return Status.OK;
    } catch (RuntimeException e) {
      return error("scan", e);
    }
  }

  @Override
  public Status update(String table, String key, Map<String, ByteIterator> values) {
    try {
      byte[] k = key(key);
      Map<String, ByteIterator> record = values;
      if (merge) {
        byte[] old = store.get(k);
        if (old == null) return Status.NOT_FOUND;
        record = new LinkedHashMap<>();
        FieldCodec.decode(old, null, record);
        record.putAll(values);
      }
      return write(k, FieldCodec.encode(record));
    } catch (RuntimeException e) {
      return error("update", e);
    }
  }

  @Override
  public Status insert(String table, String key, Map<String, ByteIterator> values) {
    try {
      return write(key(key), FieldCodec.encode(values));
    } catch (RuntimeException e) {
      return error("insert", e);
    }
  }

  @Override
  public Status delete(String table, String key) {
    try {
      byte[] k = key(key);
      store.delete(k);
      PhaseMeter.wrote(k.length);
      return Status.OK;
    } catch (RuntimeException e) {
      return error("delete", e);
    }
  }

  private Status write(byte[] k, byte[] v) {
    store.put(k, v);
    PhaseMeter.wrote(k.length + v.length);
    return Status.OK;
  }

  private Status error(String op, RuntimeException e) {
    System.err.println(engine() + " " + op + " failed: " + e);
    return Status.ERROR;
  }

  /** Parses a byte count with an optional {@code k}, {@code m} or {@code g} suffix (powers of 2). */
  public static long parseBytes(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    int shift = 0;
    char last = t.isEmpty() ? ' ' : t.charAt(t.length() - 1);
    if (last == 'k' || last == 'm' || last == 'g') {
      shift = last == 'k' ? 10 : last == 'm' ? 20 : 30;
      t = t.substring(0, t.length() - 1);
    }
    return Long.parseLong(t) << shift;
  }
}
