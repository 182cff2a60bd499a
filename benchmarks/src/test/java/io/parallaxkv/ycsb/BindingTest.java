package io.parallaxkv.ycsb;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Parallax;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Vector;
import java.util.concurrent.CountDownLatch;
import org.apache.htrace.core.HTraceConfiguration;
import org.apache.htrace.core.Tracer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import site.ycsb.ByteIterator;
import site.ycsb.ClientThread;
import site.ycsb.DB;
import site.ycsb.DBFactory;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;
import site.ycsb.measurements.Measurements;

/** The three bindings driven by YCSB's own client classes, and the shared engine. */
class BindingTest {
  @TempDir
  Path tmp;

  private Properties props(String binding) {
    Properties p = new Properties();
    p.setProperty("workload", MixWorkload.class.getName());
    p.setProperty("mix", "SD");
    p.setProperty("recordcount", "400");
    p.setProperty("operationcount", "800");
    p.setProperty("readproportion", "0.3");
    p.setProperty("updateproportion", "0.3");
    p.setProperty("scanproportion", "0.1");
    p.setProperty("insertproportion", "0.1");
    p.setProperty("readmodifywriteproportion", "0.2");
    p.setProperty("maxscanlength", "20");
    p.setProperty("dataintegrity", "true");
    p.setProperty("parallax.dir", tmp.resolve(binding).toString());
    p.setProperty("rocksdb.dir", tmp.resolve(binding).toString());
    p.setProperty("rocksdb.cachesize", "8m");
    p.setProperty("rocksdb.writebuffersize", "4m");
    p.setProperty("parallax.l0size", "4m");
    return p;
  }

  /** Runs {@code threads} YCSB client threads, each with its own DB object, as site.ycsb.Client does. */
  private static void runClients(String binding, Properties p, MixWorkload w, boolean transactions, int ops)
      throws Exception {
    Measurements.setProperties(p);
    Tracer tracer = new Tracer.Builder("test").conf(HTraceConfiguration.fromMap(Map.of())).build();
    int threads = 2;
    CountDownLatch done = new CountDownLatch(threads);
    List<Thread> ts = new ArrayList<>();
    for (int i = 0; i < threads; i++) {
      ClientThread c = new ClientThread(DBFactory.newDB(binding, p, tracer), transactions, w, p, ops / threads, 0, done);
      c.setThreadId(i);
      c.setThreadCount(threads);
      Thread t = new Thread(c);
      ts.add(t);
      t.start();
    }
    done.await();
    for (Thread t : ts) t.join();
  }

  private static String key(long i) {
    return String.format("user%020d", i);
  }

  @ParameterizedTest
  @ValueSource(strings = {"io.parallaxkv.ycsb.ParallaxClient", "io.parallaxkv.ycsb.RocksDbClient",
      "io.parallaxkv.ycsb.BlobDbClient"})
  void ycsbLoadAndRunThenEveryOperation(String binding) throws Exception {
    Properties p = props(binding);
    Measurements.setProperties(p);
    MixWorkload w = new MixWorkload();
    w.init(p);
    runClients(binding, p, w, false, 400);
    runClients(binding, p, w, true, 800);

    DB db = DBFactory.newDB(binding, p, new Tracer.Builder("t").conf(HTraceConfiguration.fromMap(Map.of())).build());
    db.init();
    try {
      for (int i = 0; i < 3; i++) {
        String k = key(i);
        Map<String, ByteIterator> record = w.record(k, i);
        Map<String, String> expected = StringByteIterator.getStringMap(w.record(k, i));
        assertEquals(Status.OK, db.insert("usertable", k, record));
        Map<String, ByteIterator> got = new HashMap<>();
        assertEquals(Status.OK, db.read("usertable", k, null, got));
        assertEquals(expected, StringByteIterator.getStringMap(got), "value read back differs");
        got.clear();
        assertEquals(Status.OK, db.read("usertable", k, null, got));
        assertTrue(w.isValid(k, got));
      }
      Map<String, ByteIterator> extra = new LinkedHashMap<>();
      extra.put("g", new StringByteIterator("added"));
      assertEquals(Status.OK, db.update("usertable", key(0), extra));
      Map<String, ByteIterator> merged = new HashMap<>();
      assertEquals(Status.OK, db.read("usertable", key(0), null, merged));
      assertEquals(2, merged.size(), "update merges fields into the record");
      assertEquals("added", merged.get("g").toString());

      Vector<HashMap<String, ByteIterator>> rows = new Vector<>();
      assertEquals(Status.OK, db.scan("usertable", key(1), 2, null, rows));
      assertEquals(2, rows.size());
      assertTrue(w.isValid(key(1), rows.get(0)));
      assertTrue(w.isValid(key(2), rows.get(1)));

      assertEquals(Status.OK, db.delete("usertable", key(1)));
      assertEquals(Status.NOT_FOUND, db.read("usertable", key(1), null, new HashMap<>()));
    } finally {
      db.cleanup();
    }
  }

  @Test
  void clientThreadsShareOneEngineUntilTheLastCleanup() throws Exception {
    Properties p = props("shared");
    ParallaxClient a = new ParallaxClient();
    ParallaxClient b = new ParallaxClient();
    a.setProperties(p);
    b.setProperties(p);
    a.init();
    b.init();
    String id = "parallax:" + tmp.resolve("shared").toAbsolutePath().normalize();
    assertEquals(2, SharedStore.refs(id));
    Map<String, ByteIterator> v = Map.of("f0", new StringByteIterator("hello"));
    assertEquals(Status.OK, a.insert("t", "k1", v));
    Map<String, ByteIterator> got = new HashMap<>();
    assertEquals(Status.OK, b.read("t", "k1", null, got));
    assertEquals("hello", got.get("f0").toString());
    a.cleanup();
    assertEquals(1, SharedStore.refs(id));
    assertEquals(Status.OK, b.read("t", "k1", null, new HashMap<>()));
    b.cleanup();
    assertEquals(0, SharedStore.refs(id));
    try (Parallax reopened = Parallax.open(tmp.resolve("shared").resolve(ParallaxClient.VOLUME_FILE))) {
      assertEquals("ycsb", reopened.regions().get(0));
      try (var r = reopened.openRegion("ycsb")) {
        assertTrue(r.exists("k1".getBytes(StandardCharsets.UTF_8)));
      }
    }
  }
}
