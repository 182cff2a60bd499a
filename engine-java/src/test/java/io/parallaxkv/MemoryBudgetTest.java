package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@link Options.Builder#memoryBudgetMiB}: many regions stay under one budget together. */
class MemoryBudgetTest {
  private static final int REGIONS = 64, THREADS = 4, PER_REGION = 3000, BUDGET_MIB = 16;

  @TempDir Path dir;

  private static byte[] value(int region, int i) {
    byte[] v = new byte[100 + (i * 7 + region) % 300];
    Arrays.fill(v, (byte) (region * 31 + i));
    return v;
  }

  /** Loads the regions from THREADS threads; returns the volume's stats after the load. */
  private VolumeStats load(String name, int budgetMiB) throws Exception {
    Options o = Options.builder().l0Size(4 << 20).memoryBudgetMiB(budgetMiB).build();
    try (Parallax db = Parallax.open(dir.resolve(name), o)) {
      List<Region> regions = new ArrayList<>();
      for (int i = 0; i < REGIONS; i++) regions.add(db.region("region" + i));
      AtomicReference<Throwable> failure = new AtomicReference<>();
      List<Thread> threads = new ArrayList<>();
      for (int t = 0; t < THREADS; t++) {
        int first = t;
        threads.add(new Thread(() -> {
          try {
            for (int i = 0; i < PER_REGION; i++)
              for (int r = first; r < REGIONS; r += THREADS)
                regions.get(r).put(b("k" + i), value(r, i));
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
          }
        }));
      }
      threads.forEach(Thread::start);
      for (Thread t : threads) t.join();
      if (failure.get() != null) throw new AssertionError(failure.get());
      VolumeStats vs = db.stats();
      for (int r = 0; r < REGIONS; r++)
        for (int i = 0; i < PER_REGION; i++)
          assertArrayEquals(value(r, i), regions.get(r).get(b("k" + i)), "region " + r + " key " + i);
      for (Region r : regions) r.close();
      assertEquals(0, db.stats().memoryUsed(), "every L0 given back once its region closed");
      return vs;
    }
  }

  @Test
  void manyRegionsStayUnderOneBudget() throws Exception {
    long budget = (long) BUDGET_MIB << 20, slack = THREADS * ((1L << 20) + (64 << 10));
    VolumeStats capped = load("capped.vol", BUDGET_MIB);
    assertEquals(budget, capped.memoryBudget());
    assertTrue(capped.memoryPeak() <= budget + slack, capped.toString());
    VolumeStats free = load("free.vol", 0);
    assertEquals(0, free.memoryBudget());
    assertTrue(free.memoryPeak() > 3 * budget, "without a budget the same load peaks at "
        + free.memoryPeak() + " bytes: the bound above would not show anything");
  }

  @Test
  void negativeBudgetIsRefused() {
    assertThrows(InvalidArgumentException.class, () -> Options.builder().memoryBudgetMiB(-1));
  }
}
