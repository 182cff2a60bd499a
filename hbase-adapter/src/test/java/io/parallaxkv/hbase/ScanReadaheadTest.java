package io.parallaxkv.hbase;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.ResultScanner;
import org.apache.hadoop.hbase.client.Scan;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.filter.PageFilter;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A forward scan tells the engine how many entries it will read (its rows times the cells per
 * row the table's scans saw), so that on data larger than memory their values are asked of the
 * device at once. The table learns cells per row from each scan's first row, every family's
 * cells counted, since the engine walks them all. The hint changes no answer.
 */
class ScanReadaheadTest {
  private static final TableName NAME = TableName.valueOf("ra");
  private static final byte[] A = Bytes.toBytes("a");
  private static final byte[] B = Bytes.toBytes("b");

  @TempDir Path dir;

  @Test
  void theHintIsRowsTimesCellsPerRow() {
    assertEquals(10, ParallaxScanner.readahead(new Scan(new Get(Bytes.toBytes("r"))), 10), "a Get: one row");
    assertEquals(70, ParallaxScanner.readahead(new Scan().setLimit(7), 10), "the limit");
    assertEquals(500, ParallaxScanner.readahead(new Scan().setCaching(50), 10), "else the caching");
    assertEquals(70, ParallaxScanner.readahead(new Scan().setLimit(7).setCaching(50), 10), "the limit first");
    assertEquals(0, ParallaxScanner.readahead(new Scan(), 10), "rows unknown: no hint");
    assertEquals(0, ParallaxScanner.readahead(new Scan().setLimit(7), 0), "cells per row unknown: no hint");
    assertEquals(Integer.MAX_VALUE, ParallaxScanner.readahead(new Scan().setCaching(Integer.MAX_VALUE), 3));
  }

  @Test
  void scansLearnCellsPerRowAndReturnTheSameRows() throws Exception {
    try (Connection c = ConnectionFactory.createConnection(Adapter.conf(dir.resolve("ra.vol")))) {
      c.getAdmin().createTable(TableDescriptorBuilder.newBuilder(NAME)
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(A))
          .setColumnFamily(ColumnFamilyDescriptorBuilder.of(B))
          .build());
      TableStore store = ((ParallaxConnection) c).volume().tables().get(NAME);
      try (Table t = c.getTable(NAME)) {
        for (int i = 0; i < 200; i++) {
          t.put(new Put(row(i))
              .addColumn(A, Bytes.toBytes("x"), Bytes.toBytes("x" + i))
              .addColumn(A, Bytes.toBytes("y"), Bytes.toBytes("y" + i))
              .addColumn(B, Bytes.toBytes("z"), Bytes.toBytes("z" + i)));
        }
        assertEquals(0, store.cellsPerRow(), "no scan yet");

        // YCSB's scan: a start row, caching and a PageFilter of the rows wanted, only family A.
        Scan ycsb = new Scan().withStartRow(row(10)).setCaching(5).setFilter(new PageFilter(5)).addFamily(A);
        assertEquals(List.of("r010", "r011", "r012", "r013", "r014"), rows(t, ycsb, 5));
        assertEquals(3, store.cellsPerRow(), "every family's cells are walked");
        assertEquals(15, ParallaxScanner.readahead(ycsb, store.cellsPerRow()));

        Result one = t.get(new Get(row(42)));
        assertEquals(3, one.size());
        assertEquals("z42", Bytes.toString(one.getValue(B, Bytes.toBytes("z"))));

        // Wider rows move the average towards them.
        for (int i = 0; i < 200; i++) {
          Put p = new Put(row(i));
          for (int q = 0; q < 8; q++) p.addColumn(B, Bytes.toBytes("w" + q), Bytes.toBytes(q));
          t.put(p);
        }
        for (int i = 0; i < 40; i++) assertEquals(1, rows(t, new Scan().withStartRow(row(i)).setLimit(1), 1).size());
        assertEquals(11, store.cellsPerRow());

        // A compaction reads every row (with all its versions) and teaches nothing: 30 versions
        // of one cell in the last row it reads would otherwise move the average up.
        for (long ts = 1; ts <= 30; ts++) t.put(new Put(row(199)).addColumn(A, Bytes.toBytes("x"), ts, Bytes.toBytes(ts)));
        c.getAdmin().majorCompact(NAME);
        assertEquals(11, store.cellsPerRow());

        // Reversed scans seek to each row and tell nothing; their answers are as before.
        List<String> reversed = rows(t, new Scan().withStartRow(row(5)).setReversed(true).setLimit(3), 3);
        assertEquals(List.of("r005", "r004", "r003"), reversed);
        List<String> all = rows(t, new Scan(), 1000);
        assertEquals(200, all.size());
        assertEquals("r199", all.get(199));
      }
    }
  }

  private static byte[] row(int i) {
    return Bytes.toBytes(String.format("r%03d", i));
  }

  private static List<String> rows(Table t, Scan scan, int most) throws Exception {
    List<String> out = new ArrayList<>();
    try (ResultScanner s = t.getScanner(scan)) {
      for (Result r = s.next(); r != null && out.size() < most; r = s.next()) out.add(Bytes.toString(r.getRow()));
    }
    return out;
  }
}
