package io.parallaxkv.bench;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;

/**
 * {@code Region.multiGet} against {@code get} per key, in the calling thread's CPU time, which a
 * shared machine disturbs far less than wall time (JMH's {@code ParallaxBench.multiGet100} on a
 * loaded 2-core machine had errors as large as its scores). Loads PAIRS random 20-byte keys with
 * 100-byte values into an L0 large enough to hold them all, optionally flushes them to L1, then
 * runs 6 rounds of 200 000 random lookups each way and prints the best round of each.
 *
 * <pre>
 * java [-Dparallax.backend=jni|ffm] -cp benchmarks/target/benchmarks.jar \
 *     io.parallaxkv.bench.MultiGetCpu PAIRS l0|flushed [BATCH]
 * </pre>
 */
public final class MultiGetCpu {
  private static final int LOOKUPS = 200_000;
  private static final int ROUNDS = 6;

  private MultiGetCpu() {}

  public static void main(String[] args) throws IOException {
    if (args.length < 2 || !List.of("l0", "flushed").contains(args[1])) {
      System.err.println("usage: MultiGetCpu PAIRS l0|flushed [BATCH]");
      System.exit(2);
    }
    int pairs = Integer.parseInt(args[0]);
    boolean flushed = args[1].equals("flushed");
    int batch = args.length > 2 ? Integer.parseInt(args[2]) : 100;
    ThreadMXBean cpu = ManagementFactory.getThreadMXBean();
    Random rnd = new Random(1);
    byte[][] keys = new byte[pairs][];
    Path dir = Files.createTempDirectory("multiget-cpu");
    try (Parallax db = Parallax.open(dir.resolve("bench.vol"),
            Options.builder().l0Size(1L << 30).build());
        Region region = db.region("bench")) {
      byte[] value = new byte[100];
      for (int i = 0; i < pairs; i++) {
        keys[i] = String.format("user%016x", rnd.nextLong()).getBytes(StandardCharsets.US_ASCII);
        rnd.nextBytes(value);
        region.put(keys[i], value);
      }
      if (flushed) region.flush();
      double bestGet = Double.MAX_VALUE, bestMulti = Double.MAX_VALUE;
      long checksum = 0, looked = 0;
      for (int round = 0; round < ROUNDS; round++) {
        long t0 = cpu.getCurrentThreadCpuTime();
        for (int i = 0; i < LOOKUPS; i++, looked++) {
          checksum += region.get(keys[rnd.nextInt(pairs)]).length;
        }
        long t1 = cpu.getCurrentThreadCpuTime();
        for (int i = 0; i < LOOKUPS; i += batch) {
          List<byte[]> some = new ArrayList<>(batch);
          for (int j = 0; j < batch; j++) some.add(keys[rnd.nextInt(pairs)]);
          for (byte[] v : region.multiGet(some)) checksum += v.length;
          looked += batch;
        }
        long t2 = cpu.getCurrentThreadCpuTime();
        bestGet = Math.min(bestGet, (t1 - t0) / (double) LOOKUPS);
        bestMulti = Math.min(bestMulti, (t2 - t1) / (double) LOOKUPS);
      }
      if (checksum != looked * value.length) throw new AssertionError("a loaded key was missing");
      System.out.printf("%s, %d pairs %s: get %.0f CPU ns/key, multiGet(%d) %.0f CPU ns/key (%.2fx)%n",
          Parallax.backend(), pairs, flushed ? "flushed to L1" : "in L0", bestGet, batch,
          bestMulti, bestGet / bestMulti);
    } finally {
      try (Stream<Path> files = Files.walk(dir)) {
        files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
      }
    }
  }
}
