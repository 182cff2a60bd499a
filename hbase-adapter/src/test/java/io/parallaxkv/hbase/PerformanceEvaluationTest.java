package io.parallaxkv.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HBase's own PerformanceEvaluation (hbase-mapreduce's tests jar, unmodified) with
 * {@code --nomapred} in a child JVM whose hbase-site.xml selects the adapter: sequentialWrite
 * creates TestTable and fills it, randomRead and scan read it back, all without errors.
 */
class PerformanceEvaluationTest {
  private static final int ROWS = 2000;

  @TempDir Path dir;

  @Test
  void sequentialWriteRandomReadScan() throws Exception {
    Path volume = dir.resolve("volume");
    List<Path> front = List.of(ChildJvm.siteDir(dir, volume));
    StringBuilder summary = new StringBuilder("PerformanceEvaluation on the adapter, " + ROWS
        + " rows, each child JVM's wall time:");
    for (String command : new String[] {"sequentialWrite", "randomRead", "scan"}) {
      long start = System.nanoTime();
      ChildJvm.Result r = ChildJvm.run(front, "org.apache.hadoop.hbase.PerformanceEvaluation",
          List.of("--nomapred", "--rows=" + ROWS, "--oneCon=true", command, "1"), 180);
      assertEquals(0, r.exit(), command + "\n" + r.output());
      assertFalse(r.output().contains("Exception"), command + "\n" + r.output());
      summary.append(' ').append(command).append(' ')
          .append((System.nanoTime() - start) / 1_000_000).append(" ms");
    }
    System.out.println(summary);
    try (Connection c = Adapter.connect(volume);
         Table t = c.getTable(TableName.valueOf("TestTable"));
         ResultScanner s = t.getScanner(new Scan())) {
      int rows = 0;
      for (Result r : s) {
        assertTrue(r.size() > 0);
        rows++;
      }
      assertEquals(ROWS, rows, "rows sequentialWrite left in TestTable");
    }
  }
}
