package io.parallaxkv.bench;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.internal.Backend;
import io.parallaxkv.internal.HandleState;
import io.parallaxkv.internal.NativeApi;
import io.parallaxkv.internal.NativeMemory;
import java.lang.reflect.Field;
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
 * Where the time of a Java call goes: the same operations as {@link ParallaxBench}, but calling
 * the backend ({@code io.parallaxkv.internal.NativeApi}, one method per C function, raw
 * addresses) directly with keys and values already in native memory. So
 * <ul>
 *   <li>{@code raw*} = the C function + the FFM/JNI transition only;</li>
 *   <li>{@code ParallaxBench.*Direct} − {@code raw*} = the public API layer (argument checks,
 *       the handle's in-flight guard, per-thread scratch for out-parameters, exceptions);</li>
 *   <li>{@code raw*} − the C cost of the same operation measured by
 *       {@code benchmarks/src/main/c/par_op_bench.c} = the transition itself.</li>
 * </ul>
 * Internal API, reached by reflection: for measurement only. {@code exists} of an absent key is
 * the cheapest engine call that does real work (a lookup in L0 and the levels), so
 * {@code apiExistsAbsent} − {@code rawExistsAbsent} and {@code rawExistsAbsent} − its C cost
 * isolate the per-call overheads with the least engine time around them.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
@Fork(value = 1, jvmArgsPrepend = {"-Xms1g", "-Xmx1g", "--enable-native-access=ALL-UNNAMED"})
public class NativeOverheadBench {
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
  private NativeApi api;
  private long r;
  private NativeMemory keyMem;
  private NativeMemory valueMem;
  private NativeMemory outMem;
  private NativeMemory lenMem;
  private NativeMemory absentMem;
  private long keyBase;
  private long value;
  private long out;
  private long outCap;
  private long len;
  private long absent;

  @Setup(Level.Trial)
  public void setUp() throws ReflectiveOperationException {
    System.setProperty("parallax.backend", backend);
    if (!Parallax.backend().equals(backend)) {
      throw new IllegalStateException("asked for backend " + backend + ", got " + Parallax.backend());
    }
    api = Backend.api();
    w = new Workload(keys, valueSize);
    dir = Workload.tempDir("parallax-jmh");
    db = Parallax.open(dir.resolve("bench.vol"));
    region = db.region("bench");
    for (int i = 0; i < w.n; i++) region.put(w.keys[i], w.value);

    Field f = Region.class.getDeclaredField("state");
    f.setAccessible(true);
    HandleState hs = (HandleState) f.get(region);
    r = hs.acquire(); // the native par_region*; the region stays open until tearDown
    hs.release();

    keyMem = api.allocate(w.n * Workload.KEY_SIZE);
    for (int i = 0; i < w.n; i++) keyMem.buffer.put(i * Workload.KEY_SIZE, w.keys[i]);
    keyBase = keyMem.address;
    valueMem = api.allocate(Math.max(1, valueSize));
    valueMem.buffer.put(0, w.value);
    value = valueMem.address;
    outMem = api.allocate(Math.max(valueSize, 4096));
    out = outMem.address;
    outCap = outMem.size();
    lenMem = api.allocate(8);
    len = lenMem.address;
    absentMem = api.allocate(Workload.KEY_SIZE);
    absentMem.buffer.put(0, w.absentKey);
    absent = absentMem.address;
  }

  @TearDown(Level.Trial)
  public void tearDown() {
    for (NativeMemory m : new NativeMemory[] {keyMem, valueMem, outMem, lenMem, absentMem}) {
      if (m != null) m.close();
    }
    if (db != null) db.close();
    Workload.deleteRecursively(dir);
  }

  /** {@code par_get} into a native buffer through the backend alone. */
  @Benchmark
  public int rawGet() {
    long k = keyBase + (long) w.next() * Workload.KEY_SIZE;
    int rc = api.get(r, 0, k, Workload.KEY_SIZE, out, outCap, len);
    if (rc != 0) throw new AssertionError("par_get returned " + rc);
    return rc;
  }

  /** {@code par_put} of native memory through the backend alone. */
  @Benchmark
  public int rawPut() {
    long k = keyBase + (long) w.next() * Workload.KEY_SIZE;
    int rc = api.put(r, k, Workload.KEY_SIZE, value, valueSize, 0);
    if (rc != 0) throw new AssertionError("par_put returned " + rc);
    return rc;
  }

  /** {@code par_exists} of an absent key through the backend alone. */
  @Benchmark
  public int rawExistsAbsent() {
    return api.exists(r, 0, absent, Workload.KEY_SIZE);
  }

  /** {@code Region.exists(ByteBuffer)} of an absent key (direct buffer): the public API. */
  @Benchmark
  public boolean apiExistsAbsent() {
    return region.exists(w.directAbsentKey);
  }
}
