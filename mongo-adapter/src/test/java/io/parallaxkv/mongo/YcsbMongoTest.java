package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.mongodb.client.MongoClient;
import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * YCSB's own mongodb binding (site.ycsb.db.MongoDbClient, driver 5.1.0, in a child JVM with its
 * own class path) runs Load A and Run A against the server: every operation returns OK and the
 * records are there.
 */
class YcsbMongoTest {
  private static final int RECORDS = 2000;
  private static final Pattern RESULT = Pattern.compile("^\\[(\\w+)\\], Return=(\\w+), (\\d+)$",
      Pattern.MULTILINE);

  @TempDir Path dir;

  @Test
  void loadAndRunWorkloadA() throws Exception {
    Path binding = Path.of(System.getProperty("mongo.ycsb.binding", "missing"));
    assumeTrue(Files.isRegularFile(binding), "YCSB's mongodb binding is not at " + binding
        + " (shared/ycsb-bindings beside the repository; YCSB does not publish it)");
    String classPath = System.getProperty("mongo.ycsb.lib") + File.separator + "*"
        + File.pathSeparator + binding;
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      String url = server.connectionString() + "/ycsb?w=1";
      String load = ycsb(classPath, "-load", url);
      assertEquals(List.of("INSERT OK " + RECORDS), results(load), load);

      String run = ycsb(classPath, "-t", url);
      List<String> ops = results(run);
      long done = 0;
      for (String op : ops) {
        assertTrue(op.matches("(READ|UPDATE) OK \\d+"), "not OK: " + op + "\n" + run);
        done += Long.parseLong(op.substring(op.lastIndexOf(' ') + 1));
      }
      assertEquals(RECORDS, done, run);
      System.out.println("YCSB A on " + RECORDS + " records: " + throughput(load) + " inserts/s, "
          + throughput(run) + " ops/s (2 threads)");

      try (MongoClient client = MongoFixture.client(server.connectionString())) {
        assertEquals(RECORDS, client.getDatabase("ycsb").getCollection("usertable").countDocuments());
        Document valid = client.getDatabase("ycsb").runCommand(new Document("validate", "usertable"));
        assertEquals(Boolean.TRUE, valid.getBoolean("valid"), valid.toJson());
      }
    }
  }

  private String ycsb(String classPath, String phase, String url) throws Exception {
    List<String> cmd = new ArrayList<>(List.of(
        System.getProperty("mongo.java", "java"), "-cp", classPath, "site.ycsb.Client", phase,
        "-db", "site.ycsb.db.MongoDbClient", "-threads", "2", "-s",
        "-p", "workload=site.ycsb.workloads.CoreWorkload",
        "-p", "recordcount=" + RECORDS, "-p", "operationcount=" + RECORDS,
        "-p", "readproportion=0.5", "-p", "updateproportion=0.5",
        "-p", "scanproportion=0", "-p", "insertproportion=0",
        "-p", "requestdistribution=zipfian", "-p", "mongodb.url=" + url));
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
