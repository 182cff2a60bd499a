package io.parallaxkv.replication;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Replication;
import io.parallaxkv.WriteOptions;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The pieces under the cluster tests, in one JVM: the codec, the map encoding, epochs. */
class ProtocolTest {
  @TempDir Path dir;

  @Test
  void framesRoundTripAndBadBytesAreRefused() {
    Frame f = Frame.request(Frame.Type.APPLY, "r0", 7, 42, new byte[] {1, 2}, new byte[] {3}).withId(9);
    ByteBuffer b = ByteBuffer.allocate(64);
    for (ByteBuffer part : f.encode()) b.put(part);
    b.flip();
    Frame g = Frame.decode(b.duplicate());
    assertEquals(f.type(), g.type());
    assertEquals(9, g.id());
    assertEquals("r0", g.region());
    assertEquals(7, g.epoch());
    assertEquals(42, g.num());
    assertArrayEquals(f.a(), g.a());
    assertArrayEquals(f.b(), g.b());
    byte[] bytes = new byte[b.remaining()];
    b.get(bytes);
    for (int cut = 0; cut < bytes.length; cut++) {
      int n = cut;
      assertThrows(IllegalArgumentException.class, () -> Frame.decode(ByteBuffer.wrap(bytes, 0, n)));
    }
    Random rnd = new Random(16);
    for (int i = 0; i < 10000; i++) {
      byte[] junk = new byte[rnd.nextInt(64)];
      rnd.nextBytes(junk);
      try {
        Frame.decode(ByteBuffer.wrap(junk));
      } catch (IllegalArgumentException expected) {
        // the only failure a receiver has to handle
      }
    }
  }

  @Test
  void malformedPairsAreRefused() {
    byte[] pairs = Pairs.encode(List.<byte[][]>of(new byte[][] {"k".getBytes(), "value".getBytes()}));
    assertEquals(1, Pairs.decode(pairs).size());
    for (int cut = 1; cut < pairs.length; cut++) {
      int n = cut;
      assertThrows(IllegalArgumentException.class, () -> Pairs.decode(java.util.Arrays.copyOf(pairs, n)));
    }
    byte[] negative = pairs.clone();
    ByteBuffer.wrap(negative).putInt(0, -1);
    assertThrows(IllegalArgumentException.class, () -> Pairs.decode(negative));
  }

  /**
   * A build-index copy loaded from a snapshot: messages of an abandoned load are refused (a late
   * LOAD would put an older snapshot's pairs in the new one), a shipped message after a load
   * abandoned midway finds the copy empty (its log position 0, not the loaded pairs' own LSNs,
   * after which a primary would ship), a copy that took records starts again empty, a complete copy and a send-index copy refuse loads, and the committed copy holds
   * the snapshot's state and takes the log after it.
   */
  @Test
  void loadsAreOneAtATimeAndStartTheCopyAgain() throws Exception {
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), Options.builder().build());
        Parallax bv = Parallax.open(dir.resolve("b.vol"), Options.builder().build())) {
      var p = pv.region("r0");
      LocalCopy b = new LocalCopy(bv, "r0", 1, false, false, false, 1);
      try (Replication.LogCursor c = Replication.openLog(p, 1)) {
        p.put("stale".getBytes(), "x".getBytes(), WriteOptions.SYNC);
        Replication.Chunk ch = c.read(1 << 20);
        b.apply(1, ch.records()); // records the load replaces
      }
      p.delete("stale".getBytes(), WriteOptions.SYNC);
      for (int i = 0; i < 100; i++) p.put(("k" + i).getBytes(), new byte[i * 300], WriteOptions.SYNC);
      Replication.SnapshotAt at = Replication.snapshot(p);
      List<byte[][]> pairs = new java.util.ArrayList<>();
      try (var snap = at.snapshot(); var s = snap.scanner()) {
        for (boolean ok = s.seekToFirst(); ok; ok = s.next()) pairs.add(new byte[][] {s.key(), s.value()});
      }
      b.loadBegin(1, 6);
      b.load(1, 6, pairs.subList(0, 10));
      assertEquals(0, b.fence(1)[0], "a copy being loaded has no log position");
      assertEquals(0, b.apply(1, new byte[0]), "an abandoned load leaves the copy empty, never at the pairs' own LSNs");
      assertEquals(null, b.region().get("k0".getBytes()));
      assertThrows(IllegalStateException.class, () -> b.loadCommit(1, 6, at.lsn()));
      b.loadBegin(1, 7);
      b.loadBegin(1, 8);
      assertThrows(IllegalStateException.class, () -> b.load(1, 7, pairs));
      assertThrows(IllegalStateException.class, () -> b.loadCommit(1, 7, at.lsn()));
      b.load(1, 8, pairs);
      assertEquals(at.lsn(), b.loadCommit(1, 8, at.lsn()));
      assertThrows(IllegalStateException.class, () -> b.loadCommit(1, 8, at.lsn()), "committed: no load in progress");
      assertEquals(null, b.region().get("stale".getBytes()));
      b.markComplete(1);
      assertThrows(IllegalStateException.class, () -> b.loadBegin(1, 9));
      b.promote(2);
      for (int i = 0; i < 100; i++) assertEquals(i * 300, b.region().get(("k" + i).getBytes()).length);
      b.close();
      LocalCopy si = new LocalCopy(bv, "r1", 1, false, true, false, 1);
      assertThrows(IllegalStateException.class, () -> si.loadBegin(1, 10));
      si.close();
    }
  }

  /** Refused before anything starts: unknown placements, in either mode. */
  @Test
  void serverRefusesUnknownPlacements() {
    String[] base = {"--zk", "127.0.0.1:1", "--dir", dir.resolve("s").toString(), "--port", "1"};
    for (String[] extra : List.of(new String[] {"--placement", "log"},
        new String[] {"--mode", "build-index", "--placement", "log"})) {
      java.io.StringWriter err = new java.io.StringWriter();
      picocli.CommandLine cmd = new picocli.CommandLine(new ServerMain());
      cmd.setErr(new java.io.PrintWriter(err));
      String[] args = java.util.stream.Stream.concat(java.util.Arrays.stream(base), java.util.Arrays.stream(extra))
          .toArray(String[]::new);
      assertEquals(2, cmd.execute(args), err.toString());
      assertTrue(err.toString().contains("--placement"), err.toString());
    }
  }

  @Test
  void regionMapEntriesRoundTrip() {
    RegionInfo r = new RegionInfo("r1", 5, new byte[] {(byte) 0x80}, new byte[0],
        new RegionInfo.Member("127.0.0.2:7002", 1, true),
        List.of(new RegionInfo.Member("127.0.0.3:7003", 1, true), new RegionInfo.Member("127.0.0.4:7004", 5, false)));
    RegionInfo s = RegionInfo.decode("r1", r.encode());
    assertEquals(r.encode(), s.encode());
    assertEquals(true, s.contains(new byte[] {(byte) 0xc2}));
    assertEquals(false, s.contains(new byte[] {'A'}));
    assertThrows(IllegalArgumentException.class, () -> RegionInfo.decode("r1", "epoch=1;start=;end="));
    assertThrows(IllegalArgumentException.class, () -> RegionInfo.decode("r1", r.encode().replace("+", "?")));
  }

  /** A backup copy refuses any message below the highest epoch it saw (the master's fence). */
  @Test
  void fencedCopyRefusesStaleEpochs() throws Exception {
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), Options.builder().placement(Options.Placement.IN_PLACE).build());
        Parallax bv = Parallax.open(dir.resolve("b.vol"), Options.builder().placement(Options.Placement.IN_PLACE).build())) {
      var p = pv.region("r0");
      LocalCopy b = new LocalCopy(bv, "r0", 1, false, true, true, 1);
      p.put("k".getBytes(), "v".getBytes(), WriteOptions.SYNC);
      Replication.Chunk ch;
      try (Replication.LogCursor c = Replication.openLog(p, 1)) {
        ch = c.read(4096);
      }
      assertEquals(1, b.apply(1, ch.records()));
      long[] fenced = b.fence(2);
      assertEquals(1, fenced[0]);
      assertEquals(1, fenced[1]);
      p.put("k2".getBytes(), "v".getBytes(), WriteOptions.SYNC);
      try (Replication.LogCursor c = Replication.openLog(p, 2)) {
        Replication.Chunk next = c.read(4096);
        assertThrows(LocalCopy.StaleEpochException.class, () -> b.apply(1, next.records()));
        assertThrows(LocalCopy.StaleEpochException.class, () -> b.installBegin(1, 1, new byte[0]));
        assertEquals(1, b.apply(2, new byte[0]), "nothing applied from the stale primary");
        assertEquals(2, b.apply(3, next.records()), "a newer primary is heard");
        LocalCopy.StaleEpochException stale = assertThrows(LocalCopy.StaleEpochException.class, () -> b.apply(2, new byte[0]));
        assertEquals(3, stale.seen, "the refusal names the epoch the copy is at (a shipper tells its own newer epoch from a fence by it)");
      }
      b.promote(3);
      assertArrayEquals("v".getBytes(), b.region().get("k2".getBytes()));
      b.close();
    }
  }

  /**
   * Install messages name their install: a segment or commit of an install its primary gave up
   * (its call timed out, and the request ran late) is refused once a newer one began, so that an
   * older export's bytes never land in the newer install's trees.
   */
  @Test
  void messagesOfAnAbandonedInstallAreRefused() throws Exception {
    try (Parallax pv = Parallax.open(dir.resolve("p.vol"), Options.builder().placement(Options.Placement.IN_PLACE).build());
        Parallax bv = Parallax.open(dir.resolve("b.vol"), Options.builder().placement(Options.Placement.IN_PLACE).build())) {
      var p = pv.region("r0");
      LocalCopy b = new LocalCopy(bv, "r0", 1, false, true, true, 1);
      for (int i = 0; i < 100; i++) p.put(("k" + i).getBytes(), ("v" + i).getBytes(), WriteOptions.SYNC);
      p.flush();
      try (Replication.IndexExport x = Replication.exportIndex(p)) {
        byte[] seg = new byte[Replication.SEGMENT_SIZE];
        ByteBuffer first = ByteBuffer.wrap(b.installBegin(1, 7, x.layout()));
        ByteBuffer needed = ByteBuffer.wrap(b.installBegin(1, 8, x.layout()));
        assertTrue(first.remaining() > 0);
        int s0 = first.getInt();
        byte[] seg0 = Arrays.copyOf(seg, x.segment(s0, seg));
        assertThrows(IllegalStateException.class, () -> b.installSegment(1, 7, s0, seg0));
        assertThrows(IllegalStateException.class, () -> b.installCommit(1, 7));
        while (needed.hasRemaining()) {
          int s = needed.getInt();
          b.installSegment(1, 8, s, Arrays.copyOf(seg, x.segment(s, seg)));
        }
        assertEquals(x.coveredLsn(), b.installCommit(1, 8));
        assertThrows(IllegalStateException.class, () -> b.installCommit(1, 8), "committed: no install in progress");
      }
      b.promote(2);
      for (int i = 0; i < 100; i++) assertArrayEquals(("v" + i).getBytes(), b.region().get(("k" + i).getBytes()));
      b.close();
    }
  }
}
