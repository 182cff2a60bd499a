package io.parallaxkv.bench;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
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

/**
 * Single-thread get and put through the public Parallax API, {@code byte[]} and direct
 * {@link ByteBuffer} (zero-copy) variants. Each trial opens a fresh volume with the engine
 * defaults (hybrid placement, asynchronous durability within 100 ms), preloads {@code keys}
 * pairs of {@code valueSize} bytes, then gets or overwrites keys picked uniformly at random.
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

  private Path dir;
  private Parallax db;
  private Region region;
  private Workload w;
  private ByteBuffer dst;

  @Setup(Level.Trial)
  public void setUp() {
    System.setProperty("parallax.backend", backend);
    String actual = Parallax.backend();
    if (!actual.equals(backend)) {
      throw new IllegalStateException("asked for backend " + backend + ", got " + actual);
    }
    w = new Workload(keys, valueSize);
    dst = ByteBuffer.allocateDirect(Math.max(valueSize, 4096));
    dir = Workload.tempDir("parallax-jmh");
    db = Parallax.open(dir.resolve("bench.vol"));
    region = db.region("bench");
    for (int i = 0; i < w.n; i++) region.put(w.keys[i], w.value);
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    if (db != null) db.close();
    Workload.deleteRecursively(dir);
  }

  /** {@code byte[] get(byte[])}: copies the value into a new array. */
  @Benchmark
  public byte[] getBytes() {
    byte[] v = region.get(w.keys[w.next()]);
    if (v == null) throw new AssertionError("missing key");
    return v;
  }

  /** {@code int get(ByteBuffer, ByteBuffer)} with direct buffers: the engine writes into dst. */
  @Benchmark
  public int getDirect() {
    dst.clear();
    int n = region.get(w.directKeys[w.next()], dst);
    if (n < 0) throw new AssertionError("missing key");
    return n;
  }

  /** {@code put(byte[], byte[])}: overwrites a present key. */
  @Benchmark
  public void putBytes() {
    region.put(w.keys[w.next()], w.value);
  }

  /** {@code put(ByteBuffer, ByteBuffer)} with direct buffers: no copy on the Java side. */
  @Benchmark
  public void putDirect() {
    region.put(w.directKeys[w.next()], w.directValue);
  }
}
