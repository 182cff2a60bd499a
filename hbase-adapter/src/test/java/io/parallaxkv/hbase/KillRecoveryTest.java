package io.parallaxkv.hbase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code kill -9} of a process writing through the adapter ({@link KillWriter}): after reopening
 * the volume every SYNC_WAL put it acknowledged is there (that generation or a later one), and
 * every row, synced or not, is whole — its four cells in two families carry one generation.
 */
class KillRecoveryTest {
  private static final int CYCLES = Integer.getInteger("hbase.kill.cycles", 3);

  @TempDir Path dir;

  @Test
  void syncedPutsSurviveKill9AndRowsAreAllOrNothing() throws Exception {
    long seed = Long.getLong("hbase.kill.seed", System.nanoTime());
    Random random = new Random(seed);
    Path volume = dir.resolve("volume");
    try (Connection c = Adapter.connect(volume)) {
      c.getAdmin().createTable(TableDescriptorBuilder.newBuilder(KillWriter.TABLE)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(KillWriter.A))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(KillWriter.B)).build());
    }
    Map<String, Long> synced = new HashMap<>();
    long gen = 1;
    for (int cycle = 0; cycle < CYCLES; cycle++) {
      Process p = new ProcessBuilder(ChildJvm.command(List.of(), KillWriter.class.getName(),
          List.of(volume.toString(), Long.toString(gen), "60"))).redirectErrorStream(true).start();
      long acknowledged = 0;
      try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(),
          StandardCharsets.UTF_8))) {
        String line = out.readLine();
        while (line != null && !line.equals("ready")) line = out.readLine(); // log lines first
        assertEquals("ready", line, "the writer started (seed " + seed + ")");
        long killAt = System.nanoTime() + (300 + random.nextInt(1200)) * 1_000_000L;
        while (System.nanoTime() < killAt && (line = out.readLine()) != null) {
          String[] f = line.split(" ");
          if (!f[0].equals("synced")) continue;
          synced.put(f[1], Long.parseLong(f[2]));
          acknowledged++;
        }
        // SIGKILL; acknowledgements still unread are not checked (destroy closes the pipe).
        p.destroyForcibly();
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
      }
      assertTrue(acknowledged > 0, "the writer acknowledged synced puts (seed " + seed + ")");
      gen += 1_000_000;
      verify(volume, synced, seed);
    }
  }

  private static void verify(Path volume, Map<String, Long> synced, long seed) throws Exception {
    String where = " (seed " + seed + ")";
    try (Connection c = Adapter.connect(volume); Table t = c.getTable(KillWriter.TABLE)) {
      Map<String, Long> found = new HashMap<>();
      try (ResultScanner s = t.getScanner(new Scan())) {
        for (Result r : s) {
          String row = Bytes.toString(r.getRow());
          byte[] g = r.getValue(KillWriter.A, Bytes.toBytes("x"));
          assertNotNull(g, "row " + row + " lost a:x" + where);
          long gen = Bytes.toLong(g);
          assertEquals(4, r.size(), "row " + row + " is torn: " + r + where);
          byte[] pad = KillWriter.padding(gen);
          assertArrayEquals(pad, r.getValue(KillWriter.A, Bytes.toBytes("pad")),
              "row " + row + " a:pad is from another generation" + where);
          assertArrayEquals(g, r.getValue(KillWriter.B, Bytes.toBytes("y")),
              "row " + row + " b:y is from another generation" + where);
          assertArrayEquals(g, r.getValue(KillWriter.B, Bytes.toBytes("z")),
              "row " + row + " b:z is from another generation" + where);
          found.put(row, gen);
        }
      }
      for (Map.Entry<String, Long> e : synced.entrySet()) {
        Long g = found.get(e.getKey());
        assertNotNull(g, "synced row " + e.getKey() + " is missing" + where);
        assertTrue(g >= e.getValue(), "synced row " + e.getKey() + " went back from generation "
            + e.getValue() + " to " + g + where);
      }
    }
  }
}
