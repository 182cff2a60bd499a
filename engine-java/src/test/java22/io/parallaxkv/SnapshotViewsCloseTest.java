package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;
import static org.junit.jupiter.api.Assertions.*;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.Pipe;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Closing a snapshot whose {@link Snapshot#getView} buffer is in use by an I/O call on another
 * thread (FFM: the call holds the view's scope, which then cannot be closed). Here the I/O is a
 * write of the view to a pipe that nobody drains yet, as a write to a slow socket would be. The
 * close waits for the call; if it does not end within the wait, nothing under the snapshot is
 * freed (the call still reads that memory), the close reports it, and closing again once the call
 * has ended frees everything.
 */
class SnapshotViewsCloseTest {
  private static final int VALUE_SIZE = 1 << 20; // far more than a pipe holds: the write blocks
  private static final String WAIT = "parallax.viewCloseWaitMillis";

  @TempDir Path dir;
  Parallax db;
  Region r;
  byte[] value;
  Pipe pipe;
  /** Threads of their own: the common pool may have only one, which the blocked write takes. */
  ExecutorService threads;

  @BeforeEach
  void open() throws IOException {
    assumeTrue("ffm".equals(Parallax.backend()), "views of engine memory are an FFM feature");
    db = TestSupport.open(dir);
    r = db.region("r");
    value = new byte[VALUE_SIZE];
    for (int i = 0; i < value.length; i++) value[i] = (byte) (i * 7 + 3);
    r.put(b("big"), value);
    pipe = Pipe.open();
    threads = Executors.newCachedThreadPool();
  }

  @AfterEach
  void close() throws IOException {
    System.clearProperty(WAIT);
    if (pipe != null) {
      pipe.source().close();
      pipe.sink().close();
    }
    if (db != null) db.close();
    if (threads != null) threads.shutdownNow();
  }

  /** Writes all of {@code view} to the pipe on another thread; returns when it is blocked. */
  private CompletableFuture<Integer> blockedWrite(ByteBuffer view) throws InterruptedException {
    CompletableFuture<Integer> written = CompletableFuture.supplyAsync(() -> {
      try {
        int n = 0;
        while (view.hasRemaining()) n += pipe.sink().write(view);
        return n;
      } catch (IOException e) {
        throw new RuntimeException(e);
      }
    }, threads);
    Thread.sleep(200);
    assertFalse(written.isDone(), "the pipe took the whole value: the write did not block");
    return written;
  }

  /** Reads the pipe to the end of {@code n} bytes. */
  private byte[] drain(int n) throws IOException {
    ByteBuffer got = ByteBuffer.allocate(n);
    while (got.hasRemaining()) pipe.source().read(got);
    return got.array();
  }

  private CompletableFuture<byte[]> drainLater(int n, long delayMillis) {
    return CompletableFuture.supplyAsync(() -> {
      try {
        Thread.sleep(delayMillis);
        return drain(n);
      } catch (IOException | InterruptedException e) {
        throw new RuntimeException(e);
      }
    }, threads);
  }

  @Test
  void closingTheRegionWaitsForAnIoCallOnASnapshotView() throws Exception {
    Snapshot snap = r.snapshot();
    ByteBuffer view = snap.getView(b("big"));
    CompletableFuture<Integer> written = blockedWrite(view.duplicate());
    CompletableFuture<byte[]> drained = drainLater(VALUE_SIZE, 300);

    r.close(); // waits for the write, then releases the snapshot and closes the region

    assertEquals(VALUE_SIZE, written.get(10, TimeUnit.SECONDS));
    assertArrayEquals(value, drained.get(10, TimeUnit.SECONDS));
    assertFalse(snap.isOpen());
    assertThrows(IllegalStateException.class, () -> view.get(0), "views end with the snapshot");
    try (Region again = db.openRegion("r")) { // the region was freed: no PAR_EBUSY
      assertArrayEquals(value, again.get(b("big")));
    }
  }

  @Test
  void aCloseThatCannotFreeAViewInUseReportsItAndAFollowingCloseFreesAll() throws Exception {
    System.setProperty(WAIT, "100");
    Region other = db.region("other");
    other.put(b("k"), b("v"));
    Snapshot snap = r.snapshot();
    Snapshot unrelated = r.snapshot();
    ByteBuffer view = snap.getView(b("big"));
    CompletableFuture<Integer> written = blockedWrite(view.duplicate());

    BusyException e = assertThrows(BusyException.class, db::close);
    assertTrue(e.getMessage().contains("Region 'r'"), e.getMessage());
    BusyException region = assertInstanceOf(BusyException.class, e.getSuppressed()[0]);
    BusyException snapshot = assertInstanceOf(BusyException.class, region.getSuppressed()[0]);
    assertTrue(snapshot.getMessage().contains("Snapshot of region 'r'"), snapshot.getMessage());
    assertEquals(1, e.getSuppressed().length);
    assertEquals(1, region.getSuppressed().length);

    // Closed for callers; the other handles are freed; the view's memory is still the value's.
    assertFalse(db.isOpen());
    assertFalse(r.isOpen());
    assertFalse(snap.isOpen());
    assertFalse(other.isOpen());
    assertFalse(unrelated.isOpen());
    assertThrows(ParallaxClosedException.class, () -> r.get(b("big")));
    assertThrows(ParallaxClosedException.class, () -> snap.get(b("big")));
    assertEquals(value[12345], view.get(12345));
    assertThrows(BusyException.class, snap::close, "still in use");

    assertArrayEquals(value, drain(VALUE_SIZE), "the write read the value, not freed memory");
    assertEquals(VALUE_SIZE, written.get(10, TimeUnit.SECONDS));
    db.close(); // now frees the snapshot, the region and the volume
    db.close();
    assertThrows(IllegalStateException.class, () -> view.get(0));
    db = Parallax.open(dir.resolve("test.vol"), TestSupport.small()); // the lock was released
    r = db.region("r");
    assertTrue(Arrays.equals(value, r.get(b("big"))));
  }
}
