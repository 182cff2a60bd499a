package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.model.Filters;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * YCSB's own mongodb binding (site.ycsb.db.MongoDbClient, driver 5.1.0, in a child JVM with its
 * own class path) runs Load A and Run A–E against the server: every operation returns OK, each
 * run performs its operation mix, and the records are there with their indexes valid.
 */
class YcsbMongoTest {
  private static final int RECORDS = 2000;
  private static final Pattern RESULT = Pattern.compile("^\\[(\\w+)\\], Return=(\\w+), (\\d+)$",
      Pattern.MULTILINE);
  /** YCSB's core workloads A–E: read, update, scan and insert proportions, and distribution. */
  private static final Map<String, String[]> WORKLOADS = new LinkedHashMap<>();
  static {
    WORKLOADS.put("A", new String[] {"0.5", "0.5", "0", "0", "zipfian"});
    WORKLOADS.put("B", new String[] {"0.95", "0.05", "0", "0", "zipfian"});
    WORKLOADS.put("C", new String[] {"1", "0", "0", "0", "zipfian"});
    WORKLOADS.put("D", new String[] {"0.95", "0", "0", "0.05", "latest"});
    WORKLOADS.put("E", new String[] {"0", "0", "0.95", "0.05", "zipfian"});
  }

  @TempDir Path dir;

  @Test
  void loadAndRunWorkloadsAThroughE() throws Exception {
    Path binding = Path.of(System.getProperty("mongo.ycsb.binding", "missing"));
    assumeTrue(Files.isRegularFile(binding), "YCSB's mongodb binding is not at " + binding
        + " (shared/ycsb-bindings beside the repository; YCSB does not publish it)");
    String classPath = System.getProperty("mongo.ycsb.lib") + File.separator + "*"
        + File.pathSeparator + binding;
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0);
        MongoClient client = MongoFixture.client(server.connectionString())) {
      String url = server.connectionString() + "/ycsb?w=1";
      MongoCollection<Document> table = client.getDatabase("ycsb").getCollection("usertable");
      String load = ycsb(classPath, "-load", url, WORKLOADS.get("A"));
      assertEquals(List.of("INSERT OK " + RECORDS), results(load), load);
      List<String> loaded = table.distinct("_id", String.class).into(new ArrayList<>());
      assertEquals(RECORDS, loaded.size());
      StringBuilder summary = new StringBuilder("YCSB on " + RECORDS + " records, 2 threads: Load A "
          + throughput(load) + " ops/s");

      for (Map.Entry<String, String[]> workload : WORKLOADS.entrySet()) {
        String[] mix = workload.getValue();
        String run = ycsb(classPath, "-t", url, mix);
        Map<String, Long> done = new TreeMap<>();
        for (String op : results(run)) {
          String[] parts = op.split(" ");
          assertEquals("OK", parts[1], "not OK: " + op + "\n" + run);
          done.merge(parts[0], Long.parseLong(parts[2]), Long::sum);
        }
        assertEquals(RECORDS, done.values().stream().mapToLong(Long::longValue).sum(), run);
        String[] kinds = {"READ", "UPDATE", "SCAN", "INSERT"};
        for (int i = 0; i < kinds.length; i++) {
          assertEquals(Double.parseDouble(mix[i]) > 0, done.containsKey(kinds[i]),
              "Run " + workload.getKey() + " does " + kinds[i] + " iff its mix has it: " + done);
        }
        long inserted = done.getOrDefault("INSERT", 0L);
        assertEquals(RECORDS + inserted, table.countDocuments(), "Run " + workload.getKey());
        // D and E both insert the keys after the loaded ones: D's are removed before E runs.
        table.deleteMany(Filters.nin("_id", loaded));
        summary.append(", Run ").append(workload.getKey()).append(' ').append(throughput(run));
      }
      System.out.println(summary);

      assertEquals(RECORDS, table.countDocuments());
      Document valid = client.getDatabase("ycsb").runCommand(new Document("validate", "usertable"));
      assertEquals(Boolean.TRUE, valid.getBoolean("valid"), valid.toJson());
    }
  }

  private String ycsb(String classPath, String phase, String url, String[] mix) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        System.getProperty("mongo.java", "java"), "-cp", classPath, "site.ycsb.Client", phase,
        "-db", "site.ycsb.db.MongoDbClient", "-threads", "2", "-s",
        "-p", "workload=site.ycsb.workloads.CoreWorkload",
        "-p", "recordcount=" + RECORDS, "-p", "operationcount=" + RECORDS,
        "-p", "readproportion=" + mix[0], "-p", "updateproportion=" + mix[1],
        "-p", "scanproportion=" + mix[2], "-p", "insertproportion=" + mix[3],
        "-p", "requestdistribution=" + mix[4], "-p", "maxscanlength=100",
        "-p", "mongodb.url=" + url));
    Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "YCSB did not finish");
    String output = new String(out, StandardCharsets.UTF_8);
    assertEquals(0, p.exitValue(), output);
    assertFalse(output.contains("Return=ERROR"), output);
    return output;
  }

  /** "OP STATUS COUNT" for each operation result line (not the CLEANUP ones). */
  private static List<String> results(String output) {
    List<String> out = new ArrayList<>();
    Matcher m = RESULT.matcher(output);
    while (m.find()) {
      if (!m.group(1).equals("CLEANUP")) out.add(m.group(1) + " " + m.group(2) + " " + m.group(3));
    }
    return out;
  }

  private static String throughput(String output) {
    Matcher m = Pattern.compile("\\[OVERALL\\], Throughput\\(ops/sec\\), ([\\d.]+)").matcher(output);
    return m.find() ? String.format("%.0f", Double.parseDouble(m.group(1))) : "?";
  }
}
