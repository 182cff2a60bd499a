package io.parallaxkv;

import static io.parallaxkv.ScannerTest.bytes;
import static io.parallaxkv.TestSupport.b;
import static io.parallaxkv.TestSupport.s;
import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The FFM backend's zero-copy scanner views: revoked when the scanner moves or closes, confined to
 * the thread that took them (JDK 22+ run; the content checks of both backends are in ScannerTest).
 */
class ScannerViewsTest {
  @TempDir Path dir;
  Parallax db;
  Region r;

  @BeforeEach
  void open() {
    assumeTrue("ffm".equals(Parallax.backend()), "views of engine memory are an FFM feature");
    db = TestSupport.open(dir);
    r = db.region("r");
    for (String k : new String[] {"a", "b1", "b2", "b3", "c", "d"}) r.put(b(k), b("v" + k));
  }

  @AfterEach
  void close() {
    if (db != null) db.close();
  }

  @Test
  void ffmViewsEndWhenTheScannerMovesOrCloses() {
    Scanner s = r.scanner();
    ByteBuffer k = s.keyView();
    ByteBuffer v = s.valueView();
    assertEquals('a', k.get(0));
    assertThrows(java.nio.ReadOnlyBufferException.class, () -> v.put(0, (byte) 1));
    assertTrue(s.next());
    assertThrows(IllegalStateException.class, () -> k.get(0));
    assertThrows(IllegalStateException.class, () -> v.get(0));
    ByteBuffer k2 = s.keyView();
    assertEquals("b1", s(bytes(k2)));
    s.seek(b("c"));
    assertThrows(IllegalStateException.class, () -> k2.get(0));
    ByteBuffer k3 = s.keyView();
    s.close();
    assertThrows(IllegalStateException.class, () -> k3.get(0));
    assertThrows(ParallaxClosedException.class, s::keyView);
  }

  @Test
  void ffmViewsAreConfinedToTheThreadThatTookThem() throws Exception {
    try (Scanner s = r.scanner()) {
      ByteBuffer k = s.keyView();
      assertInstanceOf(WrongThreadException.class, onOtherThread(() -> k.get(0)));
      assertInstanceOf(IllegalStateException.class, onOtherThread(s::next));
      assertInstanceOf(IllegalStateException.class, onOtherThread(s::valueView));
      assertEquals("a", s(s.key()), "the failed move left the scanner where it was");
      assertEquals('a', k.get(0));
      s.next(); // the owner ends its views; then any thread may move the scanner
      assertNull(onOtherThread(s::next));
      assertEquals("b2", s(s.key()));
      ByteBuffer fromDeadThread = onOtherThreadResult(s::keyView);
      assertTrue(s.next(), "a terminated thread's views do not hold the scanner");
      assertEquals("b3", s(s.key()));
      assertEquals(2, fromDeadThread.remaining(), "b2: the view object stays usable as an object");
    }
  }

  @Test
  void closingFromAnotherThreadWaitsForTheViews() throws Exception {
    Scanner s = r.scanner();
    ByteBuffer v = s.valueView();
    Thread closer = new Thread(r::close);
    closer.start();
    closer.join(300);
    assertTrue(closer.isAlive(), "closing the region waits for the views of its scanner");
    assertEquals("va", s(bytes(v)), "still readable meanwhile");
    assertThrows(ParallaxClosedException.class, s::next);
    closer.join(10_000);
    assertFalse(closer.isAlive(), "the move released the views and let the close finish");
    assertFalse(r.isOpen());
    assertThrows(IllegalStateException.class, () -> v.get(0));
  }

  @Test
  void closesFromTheViewThreadAndAnotherOneBothFinish() throws Exception {
    Scanner s = r.scanner();
    CountDownLatch viewTaken = new CountDownLatch(1);
    CountDownLatch closeRegion = new CountDownLatch(1);
    Throwable[] readAfterClose = new Throwable[1];
    Thread owner = daemon(() -> {
      ByteBuffer view = s.valueView();
      viewTaken.countDown();
      await(closeRegion);
      r.close(); // ends this thread's views before waiting for the volume's close
      readAfterClose[0] = assertThrows(IllegalStateException.class, () -> view.get(0));
    });
    Thread closer = daemon(db::close);
    owner.start();
    viewTaken.await();
    closer.start();
    closer.join(300);
    assertTrue(closer.isAlive(), "closing the volume waits for the views");
    closeRegion.countDown();
    owner.join(10_000);
    closer.join(10_000);
    if (owner.isAlive() || closer.isAlive()) {
      db = null; // stuck: closing it again would hang this thread too
      fail("the two closes wait for each other");
    }
    assertFalse(s.isOpen());
    assertNotNull(readAfterClose[0], "the view was revoked");
  }

  private static Thread daemon(Runnable body) {
    Thread t = new Thread(body);
    t.setDaemon(true);
    return t;
  }

  private static void await(CountDownLatch l) {
    try {
      l.await();
    } catch (InterruptedException e) {
      throw new IllegalStateException(e);
    }
  }

  @Test
  void aViewKeepsItsUnclosedScannerAndItsMemory() throws Exception {
    Scanner leaked = r.scanner(); // never closed
    ByteBuffer v = leaked.valueView();
    WeakReference<Scanner> ref = new WeakReference<>(leaked);
    leaked = null; // only the view may keep it reachable now
    for (int i = 0; i < 5; i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertNotNull(ref.get(), "the view keeps the scanner reachable");
    assertTrue(ref.get().isOpen(), "so the garbage collector does not close it under the view");
    assertEquals("va", s(bytes(v)));
    r.close();
    assertThrows(IllegalStateException.class, () -> v.get(0));
  }

  /** Runs {@code body} on a new thread; returns what it threw, or null. */
  static Throwable onOtherThread(Runnable body) throws InterruptedException {
    Throwable[] thrown = new Throwable[1];
    Thread t = new Thread(() -> {
      try {
        body.run();
      } catch (Throwable e) {
        thrown[0] = e;
      }
    });
    t.start();
    t.join();
    return thrown[0];
  }

  /** Runs {@code body} on a new thread that terminates; returns its result. */
  static <T> T onOtherThreadResult(java.util.function.Supplier<T> body) throws InterruptedException {
    Object[] out = new Object[1];
    Throwable e = onOtherThread(() -> out[0] = body.get());
    assertNull(e);
    @SuppressWarnings("unchecked")
    T t = (T) out[0];
    return t;
  }
}
