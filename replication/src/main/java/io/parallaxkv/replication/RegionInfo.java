package io.parallaxkv.replication;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;

/**
 * One region of the region map (a ZooKeeper node per region): its key range, its epoch, its
 * primary and backups. Every change of primary or membership raises the epoch, and backups
 * reject messages of a lower epoch than the highest they saw: that fences a deposed primary.
 *
 * <p>Each member carries the epoch at which it joined (a server whose local copy was made for
 * another join epoch throws it away and starts over) and whether it was known to hold every
 * acknowledged write when the map was written ({@code complete}; a joining backup is not).
 *
 * <p>Text form: {@code epoch=E;start=HEX;end=HEX;primary=M;backups=M,M} with M =
 * {@code host:port@joinEpoch} followed by {@code +} (complete) or {@code -}.
 */
public record RegionInfo(String name, long epoch, byte[] start, byte[] end, Member primary,
    List<Member> backups) {
  /** A member of a region's replica group. */
  public record Member(String server, long joinEpoch, boolean complete) {
    String encode() {
      return server + "@" + joinEpoch + (complete ? "+" : "-");
    }

    static Member decode(String s) {
      int at = s.lastIndexOf('@');
      char c = s.charAt(s.length() - 1);
      if (at <= 0 || (c != '+' && c != '-')) throw new IllegalArgumentException("bad member " + s);
      return new Member(s.substring(0, at), Long.parseLong(s.substring(at + 1, s.length() - 1)), c == '+');
    }
  }

  public RegionInfo {
    backups = List.copyOf(backups);
  }

  /** Whether key falls in [start, end); an empty end is unbounded. */
  public boolean contains(byte[] key) {
    return Arrays.compareUnsigned(key, start) >= 0 && (end.length == 0 || Arrays.compareUnsigned(key, end) < 0);
  }

  /** The member entry of server, or null. */
  public Member member(String server) {
    if (primary.server().equals(server)) return primary;
    for (Member m : backups) if (m.server().equals(server)) return m;
    return null;
  }

  public List<String> servers() {
    List<String> s = new ArrayList<>();
    s.add(primary.server());
    for (Member m : backups) s.add(m.server());
    return s;
  }

  public String encode() {
    StringBuilder b = new StringBuilder();
    b.append("epoch=").append(epoch).append(";start=").append(HexFormat.of().formatHex(start))
        .append(";end=").append(HexFormat.of().formatHex(end)).append(";primary=").append(primary.encode())
        .append(";backups=");
    for (int i = 0; i < backups.size(); i++) b.append(i > 0 ? "," : "").append(backups.get(i).encode());
    return b.toString();
  }

  public static RegionInfo decode(String name, String text) {
    long epoch = -1;
    byte[] start = null, end = null;
    Member primary = null;
    List<Member> backups = new ArrayList<>();
    for (String field : text.split(";", -1)) {
      int eq = field.indexOf('=');
      if (eq < 0) throw new IllegalArgumentException("bad region map field " + field);
      String k = field.substring(0, eq), v = field.substring(eq + 1);
      switch (k) {
        case "epoch" -> epoch = Long.parseLong(v);
        case "start" -> start = HexFormat.of().parseHex(v);
        case "end" -> end = HexFormat.of().parseHex(v);
        case "primary" -> primary = Member.decode(v);
        case "backups" -> {
          for (String m : v.split(",")) if (!m.isEmpty()) backups.add(Member.decode(m));
        }
        default -> throw new IllegalArgumentException("unknown region map field " + k);
      }
    }
    if (epoch < 0 || start == null || end == null || primary == null) {
      throw new IllegalArgumentException("incomplete region map entry: " + text);
    }
    return new RegionInfo(name, epoch, start, end, primary, backups);
  }
}
