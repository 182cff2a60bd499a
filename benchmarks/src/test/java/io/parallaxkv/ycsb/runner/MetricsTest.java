package io.parallaxkv.ycsb.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.ycsb.ProcFs;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's arithmetic and parsers. */
class MetricsTest {
  @TempDir
  Path tmp;

  @Test
  void ioAmplificationIsDeviceBytesOverApplicationBytes() {
    assertEquals(3.0, PhaseResult.ioAmplification(100, 200, 60, 40), 1e-12);
    assertEquals(0.5, PhaseResult.ioAmplification(0, 50, 100, 0), 1e-12);
    assertTrue(Double.isNaN(PhaseResult.ioAmplification(10, 10, 0, 0)));
  }

  @Test
  void cyclesPerOpIsCpuTimeTimesClockOverOps() {
    // 2 s of CPU at 2.3 GHz over 1 M ops = 4600 cycles per op
    assertEquals(4600.0, PhaseResult.cyclesPerOp(2_000_000_000L, 2.3e9, 1_000_000), 1e-6);
    assertTrue(Double.isNaN(PhaseResult.cyclesPerOp(1, 1e9, 0)));
  }

  @Test
  void spaceAmplificationIsDiskOverLiveBytes() {
    assertEquals(1.5, PhaseResult.spaceAmplification(150, 100.0), 1e-12);
    assertTrue(Double.isNaN(PhaseResult.spaceAmplification(150, 0)));
  }

  @Test
  void derivedMetricsOfAResult() {
    YcsbReport y = new YcsbReport(2000, 50_000, Map.of(), 0);
    assertEquals(100_000, y.operations());
    PhaseResult r = new PhaseResult("parallax", "SD", Phase.RUN_A, y, 1000, 3000, 0, 1500, 500, 1_000_000_000L,
        2e9, 1 << 20, -1, 4000, 2000.0, Map.of());
    assertEquals(2.0, r.ioAmplification(), 1e-12);
    assertEquals(20_000.0, r.cyclesPerOp(), 1e-9);
    assertEquals(2.0, r.spaceAmplification(), 1e-12);
    assertTrue(Reports.csvRow(r).startsWith("parallax,SD,a,100000,2000,50000.0,0,2.000,20000,2.000,"));
  }

  @Test
  void parsesYcsbTextReports() {
    YcsbReport r = YcsbReport.parse(List.of(
        "[OVERALL], RunTime(ms), 838",
        "[OVERALL], Throughput(ops/sec), 23866.34844868735",
        "[TOTAL_GCs], Count, 2",
        "[CLEANUP], Operations, 2",
        "[CLEANUP], 50thPercentileLatency(us), 12",
        "[READ], Operations, 10000",
        "[READ], 50thPercentileLatency(us), 3",
        "[READ], 99thPercentileLatency(us), 15",
        "[READ], 99.9PercentileLatency(us), 7031",
        "[READ], Return=OK, 9990",
        "[READ], Return=NOT_FOUND, 10",
        "[VERIFY], Return=UNEXPECTED_STATE, 1"));
    assertEquals(838, r.runtimeMs());
    assertEquals(20000, r.operations());
    assertEquals(Map.of("READ", new YcsbReport.Latency(10000, 3, 15, 7031)), r.latencies());
    assertEquals(11, r.errors());
    assertThrows(IllegalArgumentException.class, () -> YcsbReport.parse(List.of("nothing")));
  }

  @Test
  void parsesProcFiles() throws Exception {
    Path io = tmp.resolve("io");
    Files.write(io, List.of("rchar: 1", "wchar: 2", "syscr: 3", "syscw: 4", "read_bytes: 4096",
        "write_bytes: 8192", "cancelled_write_bytes: 512"));
    assertEquals(new ProcFs.Io(4096, 8192, 512), ProcFs.io(io));
    assertEquals(new ProcFs.Io(96, 192, 12), ProcFs.io(io).minus(new ProcFs.Io(4000, 8000, 500)));
    Path cpuinfo = tmp.resolve("cpuinfo");
    Files.write(cpuinfo, List.of("processor\t: 0", "model name\t: Intel(R) Xeon(R) Processor", "cpu MHz\t\t: 2300.000"));
    assertEquals(2.3e9, ProcFs.cpuHz(cpuinfo), 1);
    assertEquals("Intel(R) Xeon(R) Processor", ProcFs.cpuModel(cpuinfo));
    assertEquals(17, ProcFs.majorFaults("4242 (java) S 1 4242 4242 0 -1 4194560 9031 0 17 0 55 12"));
    assertEquals(3, ProcFs.majorFaults("7 (a (b) c) R 1 7 7 0 -1 0 100 5 3 1 0 0"), "a name with ') '");
    assertTrue(ProcFs.selfMajorFaults() >= 0);
  }

  @Test
  void byThreadKind() {
    assertEquals(new ProcFs.Cpu(55, 12), ProcFs.Cpu.of("4242 (java) S 1 4242 4242 0 -1 4194560 9031 0 17 0 55 12 0 0"));
    assertEquals(new ProcFs.Cpu(1, 5), ProcFs.Cpu.of("7 (a (b) c) R 1 7 7 0 -1 0 100 5 3 1 1 5"), "a name with ') '");
    var before = Map.of(
        1L, sample("par-compaction", 10, 1, 100),
        2L, sample("par-compaction", 20, 2, 200),
        3L, sample("ycsb-client-1", 5, 5, 50));
    var after = Map.of(
        1L, sample("par-compaction", 15, 2, 150),
        2L, sample("par-compaction", 30, 4, 500),
        4L, sample("GC Thread#3", 7, 0, 0),
        5L, sample("rocksdb:low", 1, 1, 4096));
    // Thread 3 ended (left out); thread 4 started after the first table (all of its use counts).
    assertEquals(Map.of("par-compaction", sample("par-compaction", 15, 3, 350), "GC Thread", sample("GC Thread", 7, 0, 0),
        "rocksdb:low", sample("rocksdb:low", 1, 1, 4096)), ProcFs.byThreadKind(before, after));
    var self = ProcFs.selfThreads();
    assertTrue(self.size() > 1, "this JVM has threads");
    ProcFs.Cpu all = self.values().stream().map(ProcFs.ThreadSample::cpu).reduce(new ProcFs.Cpu(0, 0), ProcFs.Cpu::plus);
    assertTrue(all.userTicks() <= ProcFs.selfCpu().userTicks() + self.size(), "threads' CPU within the process's");
    long written = self.values().stream().mapToLong(t -> t.io().writeBytes()).sum();
    assertTrue(written <= ProcFs.selfIo().writeBytes(), "threads' writes within the process's");
  }

  /** A thread sample with CPU user / system ticks and bytes written (each also read, doubled). */
  private static ProcFs.ThreadSample sample(String name, long user, long system, long written) {
    return new ProcFs.ThreadSample(name, new ProcFs.Cpu(user, system), new ProcFs.Io(2 * written, written, 0));
  }

  @Test
  void findsTheOwnMemoryCgroup() {
    assertEquals("/process_api/abc", CgroupV1.ownGroup(List.of("5:devices:/", "4:memory:/process_api/abc", "0::/")));
    assertEquals("/g", CgroupV1.ownGroup(List.of("3:cpu,memory:/g")));
    assertThrows(IllegalStateException.class, () -> CgroupV1.ownGroup(List.of("0::/user.slice")));
  }

  @Test
  void phasesCarryYcsbProportions() {
    assertEquals("0.5", Phase.RUN_A.properties().get("updateproportion"));
    assertEquals("0", Phase.RUN_A.properties().get("scanproportion"));
    assertEquals("latest", Phase.RUN_D.properties().get("requestdistribution"));
    assertEquals(Phase.LOAD_A, Phase.parse("Load A"));
    assertEquals(Phase.RUN_E, Phase.parse("e"));
  }
}
