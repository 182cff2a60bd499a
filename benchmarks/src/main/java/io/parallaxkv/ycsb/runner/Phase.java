package io.parallaxkv.ycsb.runner;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * The YCSB phases the runner knows, with the operation mix of YCSB's workload files
 * {@code workloads/workloada}…{@code workloadf} (request distribution zipfian, except D:
 * latest; E scans 1–100 records, uniformly). Load A inserts the records; the runs work on them.
 */
public enum Phase {
  /** Load A: 100% inserts. */
  LOAD_A("load-a", "Load A", true, "insertproportion=1"),
  /** Run A: 50% reads, 50% updates. */
  RUN_A("a", "Run A", false, "readproportion=0.5", "updateproportion=0.5"),
  /** Run B: 95% reads, 5% updates. */
  RUN_B("b", "Run B", false, "readproportion=0.95", "updateproportion=0.05"),
  /** Run C: 100% reads. */
  RUN_C("c", "Run C", false, "readproportion=1"),
  /** Run D: 95% reads of the latest records, 5% inserts. */
  RUN_D("d", "Run D", false, "readproportion=0.95", "insertproportion=0.05",
      "requestdistribution=latest"),
  /** Run E: 95% short scans, 5% inserts. */
  RUN_E("e", "Run E", false, "scanproportion=0.95", "insertproportion=0.05",
      "maxscanlength=100", "scanlengthdistribution=uniform"),
  /** Run F: 50% reads, 50% read-modify-writes. */
  RUN_F("f", "Run F", false, "readproportion=0.5", "readmodifywriteproportion=0.5");

  /** Command-line name ({@code load-a}, {@code a} … {@code f}). */
  public final String id;
  /** Name in tables and charts. */
  public final String label;
  /** True for the load (YCSB {@code -load}), false for runs ({@code -t}). */
  public final boolean load;
  private final String[] props;

  Phase(String id, String label, boolean load, String... props) {
    this.id = id;
    this.label = label;
    this.load = load;
    this.props = props;
  }

  /** YCSB properties of this phase: the other proportions zeroed, zipfian unless set. */
  public Map<String, String> properties() {
    Map<String, String> m = new LinkedHashMap<>();
    for (String op : new String[] {"read", "update", "insert", "scan", "readmodifywrite"}) {
      m.put(op + "proportion", "0");
    }
    m.put("requestdistribution", "zipfian");
    for (String p : props) {
      int eq = p.indexOf('=');
      m.put(p.substring(0, eq), p.substring(eq + 1));
    }
    return m;
  }

  /** The phase named {@code s} ({@code load-a}, {@code a} … {@code f}, any case). */
  public static Phase parse(String s) {
    String t = s.trim().toLowerCase(Locale.ROOT);
    for (Phase p : values()) {
      if (p.id.equals(t) || p.label.toLowerCase(Locale.ROOT).equals(t)) return p;
    }
    throw new IllegalArgumentException("unknown phase " + s + " (load-a, a, b, c, d, e, f)");
  }
}
