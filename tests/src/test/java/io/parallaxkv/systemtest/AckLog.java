package io.parallaxkv.systemtest;

import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a kill-loop writer thread was told: one fixed-size record per acknowledged write (a
 * single op or a batch of consecutive ops), appended with one write(2) after the call returned.
 * The bytes are in the page cache once write(2) returns, so they survive SIGKILL of the process
 * without an fsync; a record torn by the kill (the last one) is ignored.
 */
final class AckLog {
  static final int RECORD = 33;

  private AckLog() {}

  /** Ops {@code first..last} returned; {@code sync} if written with WriteOptions.SYNC. */
  record Ack(long first, long last, boolean sync, long invokedNanos, long ackedNanos) {}

  static Path file(Path work, int thread) {
    return work.resolve("acks-" + thread + ".bin");
  }

  static Writer writer(Path work, int thread) throws IOException {
    return new Writer(new FileOutputStream(file(work, thread).toFile(), true));
  }

  static final class Writer implements AutoCloseable {
    private final FileOutputStream out;
    private final ByteBuffer record = ByteBuffer.allocate(RECORD);

    private Writer(FileOutputStream out) {
      this.out = out;
    }

    void append(long first, long last, boolean sync, long invoked, long acked) throws IOException {
      record.clear();
      record.putLong(first).putLong(last).put((byte) (sync ? 1 : 0)).putLong(invoked).putLong(acked);
      out.write(record.array(), 0, RECORD);
    }

    @Override
    public void close() throws IOException {
      out.close();
    }
  }

  static List<Ack> read(Path work, int thread) throws IOException {
    Path f = file(work, thread);
    List<Ack> acks = new ArrayList<>();
    if (!Files.exists(f)) return acks;
    ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(f));
    while (b.remaining() >= RECORD) {
      acks.add(new Ack(b.getLong(), b.getLong(), b.get() != 0, b.getLong(), b.getLong()));
    }
    return acks;
  }
}
