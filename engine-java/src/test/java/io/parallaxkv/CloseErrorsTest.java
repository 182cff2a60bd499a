package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A close that fails part-way (both backends): the error of a child closed by its parent's close
 * reaches the caller as a suppressed exception, the other children and the parent are closed and
 * freed all the same, and closing again does nothing. The FFM case of a child that cannot be freed
 * yet (a snapshot view in use) is in SnapshotViewsCloseTest.
 */
class CloseErrorsTest {
  @TempDir Path dir;

  /**
   * Unlogged writes live only in L0 until a flush; on a volume capped below their size, the flush
   * that closing the region runs fails with PAR_ENOSPC.
   */
  private static void fillWithUnloggedWrites(Region r) {
    byte[] value = new byte[400];
    for (int i = 0; i < 60_000; i++) {
      r.put(b(String.format("k%07d", i)), value, WriteOptions.NO_WAL);
    }
  }

  private static Options capped() {
    return Options.builder().l0Size(64 << 20).maxVolumeSize(16 << 20).build();
  }

  @Test
  void aRegionsCloseErrorIsSuppressedInTheVolumesAndEverythingIsFreed() {
    Path path = dir.resolve("full.vol");
    Parallax db = Parallax.open(path, capped());
    Region other = db.region("other");
    other.put(b("k"), b("v"), WriteOptions.SYNC);
    Snapshot snap = other.snapshot();
    Scanner sc = other.scanner();
    Region full = db.region("full");
    fillWithUnloggedWrites(full);

    ParallaxException e = assertThrows(ParallaxException.class, db::close);
    Throwable[] suppressed = e.getSuppressed();
    assertEquals(1, suppressed.length, "the failed region's error: " + e);
    assertInstanceOf(NoSpaceException.class, suppressed[0]);
    assertTrue(e.getMessage().contains(path.toString()), e.getMessage());
    assertTrue(e.getMessage().contains("Region 'full'"), e.getMessage());
    assertEquals(ParallaxException.ENOSPC, e.status());

    assertFalse(db.isOpen());
    assertFalse(full.isOpen());
    assertFalse(other.isOpen());
    assertFalse(snap.isOpen());
    assertFalse(sc.isOpen());
    db.close(); // idempotent: the error was reported once
    full.close();
    snap.close();
    sc.close();

    // The volume was freed (its lock released) and the other region's data is there.
    try (Parallax again = Parallax.open(path, capped()); Region r = again.openRegion("other")) {
      assertEquals("v", s(r.get(b("k"))));
    }
  }

  @Test
  void aRegionsOwnCloseErrorIsThrownOnceAndTheRegionIsFreed() {
    Path path = dir.resolve("full.vol");
    try (Parallax db = Parallax.open(path, capped())) {
      Region full = db.region("full");
      Snapshot snap = full.snapshot();
      fillWithUnloggedWrites(full);
      ParallaxException e = assertThrows(NoSpaceException.class, full::close);
      assertEquals(0, e.getSuppressed().length, e.toString());
      assertFalse(snap.isOpen());
      full.close();
      try (Region again = db.openRegion("full")) { // not left open natively: no PAR_EBUSY
        assertTrue(again.isOpen());
      }
    }
  }
}
