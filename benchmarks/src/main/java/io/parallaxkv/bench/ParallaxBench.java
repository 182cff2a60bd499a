package io.parallaxkv.bench;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Get, multi-get, put, scan-next and scan-prev through the public Parallax API, {@code byte[]} and direct
 * {@link ByteBuffer} (zero-copy) variants. Each trial opens a fresh volume with the engine
 * defaults (hybrid placement, asynchronous durability within 100 ms), preloads {@code keys}
 * pairs of {@code valueSize} bytes, then gets or overwrites keys picked uniformly at random, or
 * steps a scanner forward or backward (one per thread, wrapping around at the ends). With
 * {@code flushed=true} the pairs are flushed from L0 to the device levels before measuring.
 * Any thread count works ({@code -t 2}): keys and buffers are per thread ({@link KeyCursor}).
 *
 * <p>{@code backend} selects the binding ({@code -Dparallax.backend} set before the engine
 * loads; every trial is a fresh JVM): {@code ffm} needs JDK 22+, so on JDK 17 run with
 * {@code -p backend=jni}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsPrepend = {"-Xms1g", "-Xmx1g", "--enable-native-access=ALL-UNNAMED"})
public class ParallaxBench {
  @Param({"ffm", "jni"})
  public String backend;

  @Param({"16", "100", "1024", "4096"})
  public int valueSize;

  @Param({"100000"})
  public int keys;

  /** Whether the preloaded pairs are flushed to the device levels (else they sit in L0). */
  @Param({"false"})
  public boolean flushed;

  private Path dir;
  private Parallax db;
  private Region region;
  private Workload w;

  /** One scanner per benchmark thread over the preloaded pairs. */
  @State(Scope.Thread)
  public static class Scan {
    Scanner scanner;

    /** Opens this thread's scanner. */
    @Setup(Level.Trial)
    public void setUp(ParallaxBench b) {
      scanner = b.region.scanner();
    }

    /** Closes it (before the volume closes). */
    @TearDown(Level.Trial)
    public void tearDown() {
      scanner.close();
    }

    /** Steps to the next pair, wrapping around at the end. */
    Scanner next() {
      if (!scanner.next()) scanner.seekToFirst();
      return scanner;
    }

    /** Steps to the previous pair, wrapping around to the last at the start. */
    Scanner prev() {
      if (!scanner.prev()) scanner.seekToLast();
      return scanner;
    }
  }

  @Setup(Level.Trial)
  public void setUp() {
    System.setProperty("parallax.backend", backend);
    String actual = Parallax.backend();
    if (!actual.equals(backend)) {
      throw new IllegalStateException("asked for backend " + backend + ", got " + actual);
    }
    w = new Workload(keys, valueSize);
    dir = Workload.tempDir("parallax-jmh");
    db = Parallax.open(dir.resolve("bench.vol"));
    region = db.region("bench");
    for (int i = 0; i < w.n; i++) region.put(w.keys[i], w.value);
    if (flushed) region.flush();
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (db != null) db.close();
    Workload.deleteRecursively(dir);
  }

  /** {@code byte[] get(byte[])}: copies the value into a new array. */
  @Benchmark
  public byte[] getBytes(KeyCursor c) {
    byte[] v = region.get(w.keys[c.next(w.n)]);
    if (v == null) throw new AssertionError("missing key");
    return v;
  }

  /**
   * {@code multiGet} of 100 keys picked at random, reported per key (compare with
   * {@link #getBytes}): one snapshot and one call into the engine for the batch.
   */
  @Benchmark
  @OperationsPerInvocation(100)
  public int multiGet100(KeyCursor c) {
    List<byte[]> keys = new ArrayList<>(100);
    for (int i = 0; i < 100; i++) keys.add(w.keys[c.next(w.n)]);
    int n = 0;
    for (byte[] v : region.multiGet(keys)) {
      if (v == null) throw new AssertionError("missing key");
      n += v.length;
    }
    return n;
  }

  /** {@code int get(ByteBuffer, ByteBuffer)} with direct buffers: the engine writes into dst. */
  @Benchmark
  public int getDirect(KeyCursor c) {
    c.dst.clear();
    int n = region.get(w.directKeys[c.next(w.n)], c.dst);
    if (n < 0) throw new AssertionError("missing key");
    return n;
  }

  /** {@code put(byte[], byte[])}: overwrites a present key. */
  @Benchmark
  public void putBytes(KeyCursor c) {
    region.put(w.keys[c.next(w.n)], w.value);
  }

  /** {@code put(ByteBuffer, ByteBuffer)} with direct buffers: no copy on the Java side. */
  @Benchmark
  public void putDirect(KeyCursor c) {
    region.put(w.directKeys[c.next(w.n)], w.directValue);
  }

  /** {@code Scanner.next()} then {@code key()} and {@code value()}: copies into new arrays. */
  @Benchmark
  public int scanNextBytes(Scan s) {
    Scanner sc = s.next();
    return sc.key().length + sc.value().length;
  }

  /** {@code Scanner.next()} then {@code key(dst)} and {@code value(dst)} into a direct buffer. */
  @Benchmark
  public int scanNextDirect(Scan s, KeyCursor c) {
    Scanner sc = s.next();
    c.dst.clear();
    return sc.key(c.dst) + sc.value(c.dst);
  }

  /** {@link #scanNextBytes} in reverse: {@code Scanner.prev()}, {@code key()}, {@code value()}. */
  @Benchmark
  public int scanPrevBytes(Scan s) {
    Scanner sc = s.prev();
    return sc.key().length + sc.value().length;
  }

  /** {@link #scanNextDirect} in reverse. */
  @Benchmark
  public int scanPrevDirect(Scan s, KeyCursor c) {
    Scanner sc = s.prev();
    c.dst.clear();
    return sc.key(c.dst) + sc.value(c.dst);
  }
}
