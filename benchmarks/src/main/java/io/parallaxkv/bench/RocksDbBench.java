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
import org.rocksdb.WriteOptions;

/**
 * The same workload as {@link ParallaxBench} through RocksJava (rocksdbjni): WAL on (writes not
 * synced, as Parallax's default asynchronous durability), no compression, default block cache
 * and memtable (64 MiB), one column family.
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
  private ByteBuffer dst;

  @Setup(Level.Trial)
  public void setUp() throws RocksDBException {
    RocksDB.loadLibrary();
    w = new Workload(keys, valueSize);
    dst = ByteBuffer.allocateDirect(Math.max(valueSize, 4096));
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
  public byte[] getBytes() throws RocksDBException {
    byte[] v = db.get(readOptions, w.keys[w.next()]);
    if (v == null) throw new AssertionError("missing key");
    return v;
  }

  /** {@code int get(ReadOptions, ByteBuffer, ByteBuffer)} with direct buffers. */
  @Benchmark
  public int getDirect() throws RocksDBException {
    ByteBuffer k = w.directKeys[w.next()];
    k.rewind(); // RocksJava moves the key's position to its limit
    dst.clear();
    int n = db.get(readOptions, k, dst);
    if (n < 0) throw new AssertionError("missing key");
    return n;
  }

  /** {@code put(WriteOptions, byte[], byte[])}: overwrites a present key. */
  @Benchmark
  public void putBytes() throws RocksDBException {
    db.put(writeOptions, w.keys[w.next()], w.value);
  }

  /** {@code put(WriteOptions, ByteBuffer, ByteBuffer)} with direct buffers. */
  @Benchmark
  public void putDirect() throws RocksDBException {
    ByteBuffer k = w.directKeys[w.next()];
    k.rewind();
    w.directValue.rewind();
    db.put(writeOptions, k, w.directValue);
  }
}
