package io.parallaxkv.hbase;

import java.nio.file.Path;
import org.apache.hadoop.hbase.TableName;
import org.apache.hadoop.hbase.client.Connection;
import org.apache.hadoop.hbase.client.Durability;
import org.apache.hadoop.hbase.client.Put;
import org.apache.hadoop.hbase.client.Table;
import org.apache.hadoop.hbase.util.Bytes;

/**
 * The process KillRecoveryTest kills: writes rows whose cells span two families, each row's
 * cells carrying the same generation number, SYNC_WAL rows on the main thread, alone and in
 * two-row batches (each printed as "synced ROW GEN" once acknowledged) and ASYNC_WAL and SKIP_WAL
 * rows on another, until killed or the time
 * bound runs out. Arguments: volume path, first generation, seconds to run at most.
 */
public final class KillWriter {
  static final TableName TABLE = TableName.valueOf("kill");
  static final byte[] A = Bytes.toBytes("a");
  static final byte[] B = Bytes.toBytes("b");
  static final int ROWS = 200;

  private KillWriter() {}

  static Put row(String row, long gen, Durability durability) {
    byte[] g = Bytes.toBytes(gen);
    Put p = new Put(Bytes.toBytes(row));
    p.addColumn(A, Bytes.toBytes("x"), g).addColumn(A, Bytes.toBytes("pad"), padding(gen))
        .addColumn(B, Bytes.toBytes("y"), g).addColumn(B, Bytes.toBytes("z"), g);
    p.setDurability(durability);
    return p;
  }

  /** A value of 300 to 1799 bytes, so that rows take small, medium and large engine paths. */
  static byte[] padding(long gen) {
    byte[] pad = new byte[300 + (int) (gen % 1500)];
    java.util.Arrays.fill(pad, (byte) gen);
    return pad;
  }

  public static void main(String[] args) throws Exception {
    Path volume = Path.of(args[0]);
    long firstGen = Long.parseLong(args[1]);
    long deadline = System.nanoTime() + Long.parseLong(args[2]) * 1_000_000_000L;
    try (Connection c = Adapter.connect(volume); Table t = c.getTable(TABLE)) {
      Thread async = new Thread(() -> {
        try (Table u = c.getTable(TABLE)) {
          for (long g = firstGen; System.nanoTime() < deadline; g++) {
            u.put(row("async-" + (g % ROWS), g, Durability.ASYNC_WAL));
            u.put(row("skipwal-" + (g % ROWS), g, Durability.SKIP_WAL));
          }
        } catch (Exception e) {
          System.out.println("async writer failed: " + e);
        }
      });
      async.setDaemon(true);
      async.start();
      System.out.println("ready");
      System.out.flush();
      for (long g = firstGen; System.nanoTime() < deadline; g += 2) {
        // One row alone, then two rows as a batch (whose puts share one sync).
        String row = "sync-" + (g % ROWS);
        t.put(row(row, g, Durability.SYNC_WAL));
        System.out.println("synced " + row + " " + g);
        String second = "sync-" + ((g + 1) % ROWS);
        String third = "batch-" + (g % ROWS);
        t.put(java.util.List.of(row(second, g + 1, Durability.SYNC_WAL),
            row(third, g + 1, Durability.SYNC_WAL)));
        System.out.println("synced " + second + " " + (g + 1));
        System.out.println("synced " + third + " " + (g + 1));
        System.out.flush();
      }
    }
  }
}
