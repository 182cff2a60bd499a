package io.parallaxkv.ycsb.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The runner end to end: three engines, three phases, a tiny database, child JVMs. */
class RunnerSmokeTest {
  @TempDir
  Path tmp;

  @Test
  @Timeout(value = 60, unit = TimeUnit.SECONDS)
  void runsEveryEngineAndWritesTheReports() throws Exception {
    Path out = tmp.resolve("out");
    int rc = new CommandLine(new YcsbRunner()).execute("-n", "2000", "-o", "2000", "--phases", "load-a,a,e",
        "--dir", tmp.resolve("data").toString(), "--out", out.toString(), "--jvm-opts", "-Xmx256m -XX:TieredStopAtLevel=1",
        "--memory-budget", "8m", "--l0-size", "4m");
    assertEquals(0, rc);
    List<String> csv = Files.readAllLines(out.resolve("results.csv"));
    assertEquals(1 + 9, csv.size(), String.join("\n", csv));
    for (String row : csv.subList(1, csv.size())) {
      String[] f = row.split(",", -1);
      assertEquals("0", f[6], "errors in " + row);
      assertTrue(Double.parseDouble(f[5]) > 0, row);
      assertTrue(Double.parseDouble(f[8]) > 0, "cycles/op in " + row);
      assertTrue(Double.parseDouble(f[9]) > 0, "space amplification in " + row);
    }
    assertTrue(Files.readString(out.resolve("results.md")).contains("| Run E | blobdb |"));
    assertTrue(Files.size(out.resolve("ycsb-sd.png")) > 1000);
    assertTrue(Files.exists(out.resolve("latency.csv")));
    Properties phase = new Properties();
    try (var in = Files.newInputStream(out.resolve("logs").resolve("parallax-SD-a.phase.properties"))) {
      phase.load(in);
    }
    long cpu = Long.parseLong(phase.getProperty("cpuNanos"));
    long clients = Long.parseLong(phase.getProperty("cpuNanos.clients"));
    assertTrue(clients > 0 && clients <= cpu, "the client threads' CPU is part of the phase's: " + phase);
    assertTrue(Long.parseLong(phase.getProperty("cpuSystemNanos")) <= cpu + 10_000_000L, phase.toString());
    assertTrue(!Files.exists(tmp.resolve("data").resolve("SD").resolve("parallax")), "data removed");
  }
}
