package io.parallaxkv.bench;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.rocksdb.CompressionType;
import org.rocksdb.Options;
import org.rocksdb.ReadOptions;
import org.rocksdb.RocksDB;
import org.rocksdb.RocksDBException;
import org.rocksdb.RocksIterator;
import org.rocksdb.WriteOptions;

/**
 * The same workload as {@link ParallaxBench} through RocksJava (rocksdbjni): WAL on (writes not
 * synced, as Parallax's default asynchronous durability), no compression, default block cache
 * and memtable (64 MiB), one column family. RocksJava's {@code ByteBuffer} calls move the
 * buffers' positions, so the direct variants copy the key into a per-thread buffer first
 * ({@link KeyCursor}; 20 bytes, a few ns).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsPrepend = {"-Xms1g", "-Xmx1g", "--enable-native-access=ALL-UNNAMED"})
public class RocksDbBench {
  @Param({"16", "100", "1024", "4096"})
  public int valueSize;

  @Param({"100000"})
  public int keys;

  private Path dir;
  private Options options;
  private ReadOptions readOptions;
  private WriteOptions writeOptions;
  private RocksDB db;
  private Workload w;

  /** One iterator per benchmark thread over the preloaded pairs. */
  @State(Scope.Thread)
  public static class Scan {
    RocksIterator it;

    /** Opens this thread's iterator. */
    @Setup(Level.Trial)
    public void setUp(RocksDbBench b) {
      it = b.db.newIterator(b.readOptions);
      it.seekToFirst();
    }

    /** Closes it (before the database closes). */
    @TearDown(Level.Trial)
    public void tearDown() {
      it.close();
    }

    /** Steps to the next pair, wrapping around at the end. */
    RocksIterator next() {
      it.next();
      if (!it.isValid()) it.seekToFirst();
      return it;
    }
  }

  @Setup(Level.Trial)
  public void setUp() throws RocksDBException {
    RocksDB.loadLibrary();
    w = new Workload(keys, valueSize);
    dir = Workload.tempDir("rocksdb-jmh");
    options = new Options().setCreateIfMissing(true).setCompressionType(CompressionType.NO_COMPRESSION);
    readOptions = new ReadOptions();
    writeOptions = new WriteOptions(); // WAL on, sync off
    db = RocksDB.open(options, dir.toString());
    for (int i = 0; i < w.n; i++) db.put(writeOptions, w.keys[i], w.value);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (db != null) db.close();
    if (writeOptions != null) writeOptions.close();
    if (readOptions != null) readOptions.close();
    if (options != null) options.close();
    Workload.deleteRecursively(dir);
  }

  /** {@code byte[] get(ReadOptions, byte[])}. */
  @Benchmark
  public byte[] getBytes(KeyCursor c) throws RocksDBException {
    byte[] v = db.get(readOptions, w.keys[c.next(w.n)]);
    if (v == null) throw new AssertionError("missing key");
    return v;
  }

  /** {@code int get(ReadOptions, ByteBuffer, ByteBuffer)} with direct buffers. */
  @Benchmark
  public int getDirect(KeyCursor c) throws RocksDBException {
    c.dst.clear();
    int n = db.get(readOptions, c.key(w.keys[c.next(w.n)]), c.dst);
    if (n < 0) throw new AssertionError("missing key");
    return n;
  }

  /** {@code put(WriteOptions, byte[], byte[])}: overwrites a present key. */
  @Benchmark
  public void putBytes(KeyCursor c) throws RocksDBException {
    db.put(writeOptions, w.keys[c.next(w.n)], w.value);
  }

  /** {@code put(WriteOptions, ByteBuffer, ByteBuffer)} with direct buffers. */
  @Benchmark
  public void putDirect(KeyCursor c) throws RocksDBException {
    db.put(writeOptions, c.key(w.keys[c.next(w.n)]), c.value(w.value));
  }

  /** {@code next()} then {@code key()} and {@code value()}: copies into new arrays. */
  @Benchmark
  public int scanNextBytes(Scan s) {
    RocksIterator it = s.next();
    return it.key().length + it.value().length;
  }

  /** {@code next()} then {@code key(ByteBuffer)} and {@code value(ByteBuffer)} into a direct buffer. */
  @Benchmark
  public int scanNextDirect(Scan s, KeyCursor c) {
    RocksIterator it = s.next();
    c.dst.clear();
    int k = it.key(c.dst);
    c.dst.clear();
    return k + it.value(c.dst);
  }
}
