package io.parallaxkv.systemtest;

import static io.parallaxkv.systemtest.RegisterChecker.ABSENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.systemtest.RegisterChecker.Op;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The checker accepts linearizable histories and rejects each kind of violation. */
class RegisterCheckerTest {
  private static List<String> check(List<Op> writes, List<Op> reads) {
    return RegisterChecker.check("k", writes, reads, 10);
  }

  @Test
  void acceptsSequentialAndConcurrentReads() {
    List<Op> writes = List.of(new Op(10, 20, 1), new Op(30, 40, 2), new Op(50, 60, ABSENT));
    List<Op> reads = List.of(
        new Op(0, 5, ABSENT),   // before any write
        new Op(0, 15, 1),       // overlaps the put of 1
        new Op(0, 15, ABSENT),  // ... or precedes it
        new Op(21, 29, 1),      // between the puts
        new Op(35, 45, 1),      // overlaps the put of 2: either value
        new Op(35, 45, 2),
        new Op(41, 49, 2),
        new Op(55, 70, 2),      // overlaps the delete
        new Op(61, 70, ABSENT));
    assertEquals(List.of(), check(writes, reads));
  }

  @Test
  void rejectsStaleRead() {
    List<String> v = check(List.of(new Op(10, 20, 1), new Op(30, 40, 2)), List.of(new Op(41, 50, 1)));
    assertEquals(1, v.size(), v.toString());
    assertTrue(v.get(0).contains("overwrote it"), v.get(0));
  }

  @Test
  void rejectsReadFromTheFuture() {
    List<String> v = check(List.of(new Op(30, 40, 1)), List.of(new Op(10, 20, 1)));
    assertEquals(1, v.size(), v.toString());
    assertTrue(v.get(0).contains("started after the read ended"), v.get(0));
  }

  @Test
  void rejectsUnknownValue() {
    List<String> v = check(List.of(new Op(10, 20, 1)), List.of(new Op(30, 40, 7)));
    assertEquals(1, v.size(), v.toString());
    assertTrue(v.get(0).contains("no put wrote"), v.get(0));
  }

  @Test
  void rejectsLostWriteAndStaleDelete() {
    // Absent after a completed put with no delete: the put was lost.
    assertEquals(1, check(List.of(new Op(10, 20, 1)), List.of(new Op(30, 40, ABSENT))).size());
    // Absent, but the only delete was overwritten by a put that completed before the read.
    List<Op> writes = List.of(new Op(10, 20, ABSENT), new Op(30, 40, 2));
    assertEquals(1, check(writes, List.of(new Op(50, 60, ABSENT))).size());
    // ... while a read overlapping that put may still see the delete.
    assertEquals(List.of(), check(writes, List.of(new Op(35, 60, ABSENT))));
  }
}
