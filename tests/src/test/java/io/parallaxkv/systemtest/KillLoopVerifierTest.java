package io.parallaxkv.systemtest;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The kill loop's verifier accepts a faithful recovery and rejects a lost sync write, a torn
 * value and a recovery out of log order. The writes are applied in-process (no kill), with
 * acknowledgements whose timestamps order thread t's op s before every thread's op s + 1.
 */
class KillLoopVerifierTest {
  private static final long SEED = 7;

  @TempDir Path dir;
  private Path volume;
  private Path work;
  private KillLoopTest.ThreadModel[] models;
  /** The op every thread ends with: a single put (not in a batch), the last one on its key. */
  private long last;

  @BeforeEach
  void writeHistory() throws Exception {
    volume = dir.resolve("v.vol");
    work = Files.createDirectories(dir.resolve("work"));
    models = new KillLoopTest.ThreadModel[KillWorkload.THREADS];
    for (int t = 0; t < models.length; t++) models[t] = new KillLoopTest.ThreadModel(t);
    last = 300;
    while (!endsWithPut(last)) last++;
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region r = db.region(KillWorkload.REGION)) {
      for (int t = 0; t < models.length; t++) {
        try (AckLog.Writer acks = AckLog.writer(work, t)) {
          for (long s = 1; s <= last; s++) {
            KillWorkload.Op op = KillWorkload.op(SEED, t, s);
            if (op.delete()) r.delete(op.key());
            else r.put(op.key(), op.value());
            acks.append(s, s, s == last, s * 1000 + t * 10, s * 1000 + t * 10 + 5);
          }
        }
      }
    }
    for (KillLoopTest.ThreadModel m : models) m.acks = AckLog.read(work, m.thread);
  }

  private static boolean endsWithPut(long seq) {
    for (int t = 0; t < KillWorkload.THREADS; t++) {
      KillWorkload.Op op = KillWorkload.op(SEED, t, seq);
      if (op.delete() || KillWorkload.inBatchBlock(SEED, t, seq) || op.valueLength() > 1 << 20) {
        return false;
      }
    }
    return true;
  }

  private void verify() {
    KillLoopTest.verify(volume, SEED, models, new KillLoopTest.Totals(), "test");
  }

  /** Puts back what thread {@code t}'s key of op {@code seq} held before that op. */
  private void undo(Region r, int t, long seq) {
    KillWorkload.Op op = KillWorkload.op(SEED, t, seq);
    for (long s = seq - 1; s >= 1; s--) {
      KillWorkload.Op before = KillWorkload.op(SEED, t, s);
      if (before.keyIndex() == op.keyIndex()) {
        if (before.delete()) r.delete(op.key());
        else r.put(op.key(), before.value());
        return;
      }
    }
    r.delete(op.key());
  }

  /** Makes every acknowledgement an unsynced one. */
  private void unsynced() {
    for (KillLoopTest.ThreadModel m : models) {
      m.acks = m.acks.stream()
          .map(a -> new AckLog.Ack(a.first(), a.last(), false, a.invokedNanos(), a.ackedNanos()))
          .toList();
    }
  }

  @Test
  void acceptsTheFullHistory() {
    verify();
    for (KillLoopTest.ThreadModel m : models) assertEquals(last + 1, m.next);
  }

  @Test
  void acceptsALostUnsyncedSuffix() {
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region r = db.openRegion(KillWorkload.REGION)) {
      for (int t = 0; t < models.length; t++) undo(r, t, last);
    }
    unsynced();
    verify();
    for (KillLoopTest.ThreadModel m : models) assertEquals(last, m.next, "op " + last + " re-issued");
  }

  @Test
  void rejectsALostSyncWrite() {
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region r = db.openRegion(KillWorkload.REGION)) {
      undo(r, 2, last);
    }
    AssertionError e = assertThrows(AssertionError.class, this::verify);
    assertTrue(e.getMessage().contains("thread 2") && e.getMessage().contains("no prefix"), e.getMessage());
  }

  @Test
  void rejectsATornValue() {
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region r = db.openRegion(KillWorkload.REGION)) {
      KillWorkload.Op op = KillWorkload.op(SEED, 1, last);
      byte[] v = op.value();
      r.put(op.key(), Arrays.copyOf(v, v.length - 1));
    }
    AssertionError e = assertThrows(AssertionError.class, this::verify);
    assertTrue(e.getMessage().contains("torn"), e.getMessage());
  }

  @Test
  void rejectsARecoveryOutOfLogOrder() {
    // Thread 0 loses its last op (unsynced here) while thread 3 keeps its own, invoked after
    // thread 0's had been acknowledged: no WAL prefix looks like that.
    try (Parallax db = Parallax.open(volume, KillWorkload.options());
        Region r = db.openRegion(KillWorkload.REGION)) {
      undo(r, 0, last);
    }
    unsynced();
    AssertionError e = assertThrows(AssertionError.class, this::verify);
    assertTrue(e.getMessage().contains("thread 0's op " + last), e.getMessage());
  }
}
