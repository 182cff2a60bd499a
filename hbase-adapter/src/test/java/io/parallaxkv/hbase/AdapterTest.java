package io.parallaxkv.hbase;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hbase.DoNotRetryIOException;
import org.apache.hadoop.hbase.TableExistsException;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.TableNotDisabledException;
import org.apache.hadoop.hbase.TableNotEnabledException;
import org.apache.hadoop.hbase.TableNotFoundException;
import org.apache.hadoop.hbase.client.Admin;
import org.apache.hadoop.hbase.client.AsyncConnection;
import org.apache.hadoop.hbase.client.AsyncTable;
import org.apache.hadoop.hbase.client.BufferedMutator;
import org.apache.hadoop.hbase.client.ColumnFamilyDescriptorBuilder;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.ConnectionFactory;
import org.apache.hadoop.hbase.client.Get;
import org.apache.hadoop.hbase.client.Increment;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.RegionLocator;
import org.apache.hadoop.hbase.client.Result;
import org.apache.hadoop.hbase.client.RetriesExhaustedWithDetailsException;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.client.TableDescriptor;
import org.apache.hadoop.hbase.client.TableDescriptorBuilder;
import org.apache.hadoop.hbase.exceptions.ConnectionClosedException;
import org.apache.hadoop.hbase.regionserver.NoSuchColumnFamilyException;
import org.apache.hadoop.hbase.security.User;
import org.apache.hadoop.hbase.util.Bytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The adapter on its own: admin lifecycle and the catalog across reopening, both connection
 * constructors, the async path, TTL, concurrent increments, BufferedMutator, and bad input
 * answered with HBase's exception types.
 */
class AdapterTest {
  private static final byte[] F = Bytes.toBytes("f");
  private static final byte[] Q = Bytes.toBytes("q");
  private static final TableName T = TableName.valueOf("t");

  @TempDir Path dir;

  private static TableDescriptor table(TableName name) {
    return TableDescriptorBuilder.newBuilder(name).setColumnFamily(ColumnFamilyDescriptorBuilder.of(F)).build();
  }

  @Test
  void adminLifecycleAndCatalogSurviveReopen() throws Exception {
    Path volume = dir.resolve("v");
    try (Connection c = Adapter.connect(volume); Admin admin = c.getAdmin()) {
      assertInstanceOf(ParallaxConnection.class, c);
      admin.createTable(table(T));
      assertThrows(TableExistsException.class, () -> admin.createTable(table(T)));
      assertTrue(admin.tableExists(T));
      assertArrayEquals(new TableName[] {T}, admin.listTableNames());
      admin.modifyColumnFamily(T, ColumnFamilyDescriptorBuilder.newBuilder(F).setMaxVersions(4)
          .setTimeToLive(3600).build());
      try (Table t = c.getTable(T)) {
        t.put(new Put(Bytes.toBytes("r")).addColumn(F, Q, Bytes.toBytes("v")));
      }
      try (RegionLocator rl = c.getRegionLocator(T)) {
        assertEquals(1, rl.getAllRegionLocations().size());
        assertEquals(0, rl.getStartKeys()[0].length);
      }
      assertThrows(TableNotDisabledException.class, () -> admin.deleteTable(T));
      admin.createTable(table(TableName.valueOf("gone")));
      admin.disableTable(TableName.valueOf("gone"));
      assertThrows(TableNotEnabledException.class, () -> admin.disableTable(TableName.valueOf("gone")));
      admin.deleteTable(TableName.valueOf("gone"));
      UnsupportedOperationException e = assertThrows(UnsupportedOperationException.class,
          () -> admin.balance());
      assertTrue(e.getMessage().contains("Admin.balance"), e.getMessage());
    }
    try (Connection c = Adapter.connect(volume); Admin admin = c.getAdmin(); Table t = c.getTable(T)) {
      assertEquals(4, admin.getDescriptor(T).getColumnFamily(F).getMaxVersions());
      assertEquals(3600, admin.getDescriptor(T).getColumnFamily(F).getTimeToLive());
      assertFalse(admin.tableExists(TableName.valueOf("gone")));
      assertArrayEquals(Bytes.toBytes("v"), t.get(new Get(Bytes.toBytes("r"))).getValue(F, Q));
      admin.disableTable(T);
      assertThrows(TableNotEnabledException.class, () -> t.get(new Get(Bytes.toBytes("r"))));
      admin.truncateTable(T, false);
      assertTrue(admin.isTableEnabled(T));
      assertTrue(t.get(new Get(Bytes.toBytes("r"))).isEmpty());
    }
  }

  @Test
  void bothConstructorsAndTheAsyncPathWorkWithoutZooKeeper() throws Exception {
    Configuration conf = Adapter.conf(dir.resolve("v"));
    try (Connection three = new ParallaxConnection(conf, null, User.getCurrent());
         Connection four = new ParallaxConnection(conf, null, User.getCurrent(), Map.of())) {
      three.getAdmin().createTable(table(T));
      assertTrue(four.getAdmin().tableExists(T));
    }
    conf.set("hbase.client.async.connection.impl", ParallaxAsyncConnection.class.getName());
    conf.set("hbase.client.registry.impl", ParallaxRegistry.class.getName());
    try (AsyncConnection ac = ConnectionFactory.createAsyncConnection(conf).get()) {
      AsyncTable<?> t = ac.getTable(T);
      t.put(new Put(Bytes.toBytes("r")).addColumn(F, Q, Bytes.toBytes("async"))).get();
      assertArrayEquals(Bytes.toBytes("async"), t.get(new Get(Bytes.toBytes("r"))).get().getValue(F, Q));
      assertEquals(1, t.scanAll(new org.apache.hadoop.hbase.client.Scan()).get().size());
    }
  }

  @Test
  void ttlHidesExpiredCellsAndMinVersionsKeepsSome() throws Exception {
    try (Connection c = Adapter.connect(dir.resolve("v"))) {
      c.getAdmin().createTable(TableDescriptorBuilder.newBuilder(T).setColumnFamily(
          ColumnFamilyDescriptorBuilder.newBuilder(F).setTimeToLive(60).setMaxVersions(3).build())
          .setColumnFamily(ColumnFamilyDescriptorBuilder.newBuilder(Q).setTimeToLive(60)
              .setMinVersions(1).setMaxVersions(3).build()).build());
      long old = System.currentTimeMillis() - 120_000;
      try (Table t = c.getTable(T)) {
        byte[] row = Bytes.toBytes("r");
        t.put(new Put(row).addColumn(F, Q, old, Bytes.toBytes("old")).addColumn(Q, Q, old, Bytes.toBytes("kept")));
        Result r = t.get(new Get(row));
        assertNull(r.getValue(F, Q), "expired by the family's TTL");
        assertArrayEquals(Bytes.toBytes("kept"), r.getValue(Q, Q), "min versions keep one");
        t.put(new Put(row).addColumn(F, Q, Bytes.toBytes("new")));
        assertArrayEquals(Bytes.toBytes("new"), t.get(new Get(row)).getValue(F, Q));
      }
    }
  }

  @Test
  void majorCompactDropsWhatHBaseDrops() throws Exception {
    try (Connection c = Adapter.connect(dir.resolve("v")); Table t = c.getTable(T)) {
      c.getAdmin().createTable(TableDescriptorBuilder.newBuilder(T).setColumnFamily(
          ColumnFamilyDescriptorBuilder.newBuilder(F).setMaxVersions(2).build()).build());
      byte[] row = Bytes.toBytes("r");
      byte[] later = Bytes.toBytes("s");
      for (long ts = 1; ts <= 3; ts++) t.put(new Put(row).addColumn(F, Q, ts, Bytes.toBytes("v" + ts)));
      t.delete(new org.apache.hadoop.hbase.client.Delete(row).addColumns(F, Bytes.toBytes("gone"), 10));
      t.put(new Put(row).addColumn(F, Bytes.toBytes("gone"), 5, Bytes.toBytes("masked")));
      c.getAdmin().majorCompact(T);
      for (long ts = 1; ts <= 3; ts++) t.put(new Put(later).addColumn(F, Q, ts, Bytes.toBytes("v" + ts)));
      for (byte[] r : new byte[][] {row, later}) {
        t.delete(new org.apache.hadoop.hbase.client.Delete(r).addColumn(F, Q, 3));
      }
      assertEquals(2, t.get(new Get(later).readVersions(2)).getColumnCells(F, Q).size(),
          "uncompacted: deleting version 3 uncovers version 1");
      assertEquals(1, t.get(new Get(row).readVersions(2)).getColumnCells(F, Q).size(),
          "compacted: version 1 was beyond the maximum of 2 and is gone");
      assertNull(t.get(new Get(row)).getValue(F, Bytes.toBytes("gone")), "still masked");
      t.put(new Put(row).addColumn(F, Bytes.toBytes("gone"), 5, Bytes.toBytes("back")));
      assertArrayEquals(Bytes.toBytes("back"), t.get(new Get(row)).getValue(F, Bytes.toBytes("gone")),
          "the marker went with the compaction, as in HBase");
    }
  }

  @Test
  void concurrentIncrementsAreNotLost() throws Exception {
    try (Connection c = Adapter.connect(dir.resolve("v"))) {
      c.getAdmin().createTable(table(T));
      ExecutorService pool = Executors.newFixedThreadPool(4);
      try {
        List<Future<?>> done = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
          done.add(pool.submit(() -> {
            try (Table t = c.getTable(T)) {
              for (int i = 0; i < 250; i++) t.increment(new Increment(Bytes.toBytes("n")).addColumn(F, Q, 1));
            }
            return null;
          }));
        }
        for (Future<?> f : done) f.get();
      } finally {
        pool.shutdown();
      }
      try (Table t = c.getTable(T)) {
        assertEquals(1000, Bytes.toLong(t.get(new Get(Bytes.toBytes("n"))).getValue(F, Q)));
      }
    }
  }

  @Test
  void bufferedMutatorFlushesOnCloseAndSize() throws Exception {
    try (Connection c = Adapter.connect(dir.resolve("v"))) {
      c.getAdmin().createTable(table(T));
      try (BufferedMutator m = c.getBufferedMutator(T)) {
        for (int i = 0; i < 5000; i++) {
          m.mutate(new Put(Bytes.toBytes(String.format("r%05d", i))).addColumn(F, Q, new byte[100]));
        }
      }
      try (Table t = c.getTable(T)) {
        assertTrue(t.exists(new Get(Bytes.toBytes("r04999"))));
      }
    }
  }

  @Test
  void badInputGetsHBaseExceptionsNotACrash() throws Exception {
    Path volume = dir.resolve("v");
    Connection c = Adapter.connect(volume);
    c.getAdmin().createTable(table(T));
    Table t = c.getTable(T);
    assertThrows(NullPointerException.class, () -> new Put((byte[]) null), "as HBase's client");
    assertThrows(IllegalArgumentException.class, () -> new Put(new byte[0]));
    assertThrows(IllegalArgumentException.class, () -> t.put(new Put(Bytes.toBytes("r"))),
        "a Put without cells");
    assertThrows(IllegalArgumentException.class, () -> t.put(new Put(Bytes.toBytes("r"))
        .addColumn(F, Q, new byte[11 << 20])), "over hbase.client.keyvalue.maxsize");
    assertThrows(DoNotRetryIOException.class, () -> t.put(new Put(new byte[2000])
        .addColumn(F, Q, Bytes.toBytes("v"))), "a key over the engine's 1 KiB key limit");
    assertThrows(NoSuchColumnFamilyException.class, () -> t.put(new Put(Bytes.toBytes("r"))
        .addColumn(Bytes.toBytes("nope"), Q, Bytes.toBytes("v"))));
    assertThrows(NoSuchColumnFamilyException.class, () -> t.get(new Get(Bytes.toBytes("r"))
        .addFamily(Bytes.toBytes("nope"))));
    RetriesExhaustedWithDetailsException batch = assertThrows(
        RetriesExhaustedWithDetailsException.class, () -> t.put(List.of(
            new Put(Bytes.toBytes("ok")).addColumn(F, Q, Bytes.toBytes("v")),
            new Put(Bytes.toBytes("r")).addColumn(Bytes.toBytes("nope"), Q, Bytes.toBytes("v")))));
    assertEquals(1, batch.getNumExceptions());
    assertTrue(t.exists(new Get(Bytes.toBytes("ok"))), "the good half of the batch");
    t.put(new Put(Bytes.toBytes("s")).addColumn(F, Q, Bytes.toBytes("text")));
    assertThrows(DoNotRetryIOException.class, () -> t.increment(new Increment(Bytes.toBytes("s"))
        .addColumn(F, Q, 1)), "incrementing a value that is not 8 bytes");
    try (Table missing = c.getTable(TableName.valueOf("missing"))) {
      assertThrows(TableNotFoundException.class, () -> missing.get(new Get(Bytes.toBytes("r"))));
    }
    assertThrows(TableNotFoundException.class, () -> c.getAdmin().getDescriptor(TableName.valueOf("missing")));
    c.close();
    assertThrows(ConnectionClosedException.class, () -> t.get(new Get(Bytes.toBytes("r"))));
    assertThrows(ConnectionClosedException.class, () -> c.getTable(T));
    Configuration noPath = Adapter.conf(volume);
    noPath.unset(ParallaxConnection.PATH);
    assertThrows(java.io.IOException.class, () -> ConnectionFactory.createConnection(noPath));
  }
}
