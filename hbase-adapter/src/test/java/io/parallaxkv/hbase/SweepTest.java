package io.parallaxkv.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.Cell;
import org.apache.hadoop.hbase.CellUtil;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Delete;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The background sweep ({@link Sweeper}): the same seeded writes go to a volume that sweeps
 * (tables after 2000 cells, rows after 64) and to one that never does; every read, taken while sweeps run, must be
 * equal on both, and afterwards the swept table must hold far fewer engine entries. Reads here
 * use no time range and deletes name no single version: with those, HBase's own answers depend
 * on whether it has flushed (docs/hbase.md), and so do the adapter's on whether it has swept.
 */
class SweepTest {
  private static final TableName NAME = TableName.valueOf("swept");
  private static final byte[] VERSIONED = Bytes.toBytes("v");
  private static final byte[] EXPIRING = Bytes.toBytes("t");
  private static final int ROWS = 100;
  private static final int OPS = 30_000;

  @TempDir Path dir;

  private static Connection open(Path volume, long minCells, long rowCells) throws IOException {
    Configuration c = Adapter.conf(volume);
    c.setLong(Sweeper.MIN_CELLS, minCells);
    c.setLong(Sweeper.ROW_CELLS, rowCells);
    return ConnectionFactory.createConnection(c);
  }

  @Test
  void sweepsReclaimEntriesAndKeepEveryVisibleCell() throws Exception {
    long seed = Long.getLong("hbase.sweep.seed", System.nanoTime());
    Random random = new Random(seed);
    long now = System.currentTimeMillis();
    try (Connection swept = open(dir.resolve("swept"), 2000, 64);
        Connection kept = open(dir.resolve("kept"), 0, 0)) {
      for (Connection c : List.of(swept, kept)) {
        c.getAdmin().createTable(TableDescriptorBuilder.newBuilder(NAME)
            .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(VERSIONED).setMaxVersions(2).build())
            .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(EXPIRING).setTimeToLive(3600).build())
            .build());
      }
      try (Table s = swept.getTable(NAME); Table k = kept.getTable(NAME)) {
        for (int i = 0; i < OPS; i++) {
          byte[] row = Bytes.toBytes("row" + random.nextInt(ROWS));
          long ts = 1_000 + i;
          int kind = random.nextInt(100);
          if (kind < 75) {
            Put p = new Put(row)
                .addColumn(VERSIONED, Bytes.toBytes("q" + random.nextInt(3)), ts, Bytes.toBytes("v" + i))
                // Written already expired (its timestamp is two hours old, the TTL one hour),
                // or live.
                .addColumn(EXPIRING, Bytes.toBytes("e"), now - (random.nextInt(4) == 0 ? 0 : 7_200_000) + i,
                    Bytes.toBytes("e" + i));
            s.put(p);
            k.put(p);
          } else if (kind < 85) {
            Delete d = switch (random.nextInt(3)) {
              case 0 -> new Delete(row, ts);
              case 1 -> new Delete(row).addFamily(VERSIONED, ts);
              default -> new Delete(row).addColumns(VERSIONED, Bytes.toBytes("q" + random.nextInt(3)), ts);
            };
            s.delete(d);
            k.delete(d);
          } else {
            Get g = new Get(row).readVersions(1 + random.nextInt(3));
            assertEquals(cells(k.get(g)), cells(s.get(g)), "op " + i + " " + g + " (seed " + seed + ")");
          }
        }
        ParallaxConnection pc = (ParallaxConnection) swept;
        TableStore table = pc.volume().tables().get(NAME);
        long deadline = System.nanoTime() + 120_000_000_000L;
        while (table.sweepPending() && System.nanoTime() < deadline) Thread.sleep(10);
        assertFalse(table.sweepPending(), "the last sweep ended within two minutes");
        assertTrue(pc.volume().sweeper().sweeps() >= 3, "table sweeps ran: " + pc.volume().sweeper().sweeps());
        assertTrue(pc.volume().sweeper().rowSweeps() >= ROWS, "row sweeps ran: " + pc.volume().sweeper().rowSweeps());
        Scan all = new Scan().readAllVersions();
        assertEquals(scan(k, all), scan(s, all), "every version (seed " + seed + ")");
        long sweptEntries = entries(swept);
        long keptEntries = entries(kept);
        System.out.printf("SweepTest: %d table and %d row sweeps; engine entries %d swept, %d unswept%n",
            pc.volume().sweeper().sweeps(), pc.volume().sweeper().rowSweeps(), sweptEntries, keptEntries);
        // Without sweeping every cell written stays: OPS * 0.75 puts of two cells, and markers.
        assertTrue(keptEntries > OPS, "unswept table holds " + keptEntries);
        // Swept: at most 100 rows x (3 columns x 2 versions + 1 live TTL cell + markers), plus
        // what was written since the last sweep (under its threshold).
        assertTrue(sweptEntries < keptEntries / 3,
            "swept table holds " + sweptEntries + " entries, unswept " + keptEntries);
      }
    }
  }

  /** The table's engine entries once the engine has merged its levels (tombstones gone). */
  private static long entries(Connection c) throws IOException {
    TableStore table = ((ParallaxConnection) c).volume().tables().get(NAME);
    return table.data((region, entry) -> {
      region.compact();
      return region.estimateRange(null, null).entries();
    });
  }

  private static String scan(Table t, Scan s) throws IOException {
    List<String> rows = new ArrayList<>();
    try (ResultScanner rs = t.getScanner(s)) {
      for (Result r : rs) rows.add(cells(r));
    }
    return rows.toString();
  }

  private static String cells(Result r) {
    List<String> out = new ArrayList<>();
    for (Cell c : r.rawCells()) {
      out.add(Bytes.toString(CellUtil.cloneRow(c)) + "/" + Bytes.toString(CellUtil.cloneFamily(c)) + ":"
          + Bytes.toString(CellUtil.cloneQualifier(c)) + "/" + c.getTimestamp() + "=" + Bytes.toString(CellUtil.cloneValue(c)));
    }
    return out.toString();
  }
}
