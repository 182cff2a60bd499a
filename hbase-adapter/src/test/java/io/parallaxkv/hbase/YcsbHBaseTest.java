package io.parallaxkv.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.FirstKeyOnlyFilter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * YCSB's unmodified hbase2 binding (site.ycsb.db.hbase2.HBaseClient2) in a child JVM, configured
 * only by an hbase-site.xml on its class path that selects the adapter: Load A, then Run A to E;
 * every operation returns OK and every record is there afterwards.
 */
class YcsbHBaseTest {
  private static final int RECORDS = 1000;
  private static final int OPERATIONS = 1000;
  private static final Pattern RESULT = Pattern.compile("^\\[(\\w+)\\], Return=(\\w+), (\\d+)$",
      Pattern.MULTILINE);
  private static final String[][] WORKLOADS = {
      {"A", "readproportion=0.5", "updateproportion=0.5", "requestdistribution=zipfian"},
      {"B", "readproportion=0.95", "updateproportion=0.05", "requestdistribution=zipfian"},
      {"C", "readproportion=1", "requestdistribution=zipfian"},
      {"D", "readproportion=0.95", "insertproportion=0.05", "requestdistribution=latest"},
      {"E", "scanproportion=0.95", "insertproportion=0.05", "requestdistribution=zipfian",
          "maxscanlength=100", "scanlengthdistribution=uniform"}};

  @TempDir Path dir;

  @Test
  void loadAndRunWorkloadsAtoE() throws Exception {
    Path binding = Path.of(System.getProperty("hbase.ycsb.binding", "missing"));
    assumeTrue(Files.isRegularFile(binding), "YCSB's hbase2 binding is not at " + binding
        + " (shared/ycsb-bindings beside the repository; YCSB does not publish it)");
    Path volume = dir.resolve("volume");
    try (Connection c = Adapter.connect(volume)) {
      c.getAdmin().createTable(TableDescriptorBuilder.newBuilder(TableName.valueOf("usertable"))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of("family")).build());
    }
    List<Path> front = List.of(ChildJvm.siteDir(dir, volume), binding);

    String load = ycsb(front, "-load", new String[] {"A"});
    assertEquals(List.of("INSERT OK " + RECORDS), results(load), load);
    long mostInserted = 0; // each run numbers its inserts from recordcount up
    StringBuilder summary = new StringBuilder("YCSB hbase2 binding on the adapter, " + RECORDS
        + " records: load " + throughput(load) + " ops/s");
    for (String[] w : WORKLOADS) {
      String run = ycsb(front, "-t", w);
      long done = 0;
      long inserted = 0;
      for (String op : results(run)) {
        assertTrue(op.matches("(READ|UPDATE|INSERT|SCAN) OK \\d+"), "workload " + w[0]
            + " not OK: " + op + "\n" + run);
        long n = Long.parseLong(op.substring(op.lastIndexOf(' ') + 1));
        done += n;
        if (op.startsWith("INSERT")) inserted += n;
      }
      assertEquals(OPERATIONS, done, "workload " + w[0] + "\n" + run);
      mostInserted = Math.max(mostInserted, inserted);
      summary.append(", run ").append(w[0]).append(' ').append(throughput(run)).append(" ops/s");
    }
    System.out.println(summary);

    try (Connection c = Adapter.connect(volume);
         Table t = c.getTable(TableName.valueOf("usertable"));
         ResultScanner s = t.getScanner(new Scan().setFilter(new FirstKeyOnlyFilter()))) {
      long rows = 0;
      for (Result r : s) {
        assertFalse(r.isEmpty());
        rows++;
      }
      assertEquals(RECORDS + mostInserted, rows, "records in usertable");
    }
  }

  private static String ycsb(List<Path> front, String phase, String[] workload) throws Exception {
    List<String> args = new ArrayList<>(List.of(phase, "-db", "site.ycsb.db.hbase2.HBaseClient2",
        "-threads", "2", "-s", "-p", "workload=site.ycsb.workloads.CoreWorkload",
        "-p", "recordcount=" + RECORDS, "-p", "operationcount=" + OPERATIONS,
        "-p", "columnfamily=family", "-p", "readproportion=0", "-p", "updateproportion=0",
        "-p", "scanproportion=0", "-p", "insertproportion=0"));
    for (int i = 1; i < workload.length; i++) {
      args.add("-p");
      args.add(workload[i]);
    }
    if (phase.equals("-load")) {
      args.add("-p");
      args.add("insertproportion=1");
    }
    ChildJvm.Result r = ChildJvm.run(front, "site.ycsb.Client", args, 180);
    assertEquals(0, r.exit(), r.output());
    assertFalse(r.output().contains("Return=ERROR"), r.output());
    return r.output();
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
