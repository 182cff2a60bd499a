package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;

import java.nio.file.Path;

/**
 * CheckpointTest's child process: a writer thread puts "c" + i into two regions (region a
 * first) while the main thread takes checkpoints into args[1] back to back, printing
 * "C n" after each completes, until it is killed.
 */
final class CheckpointChild {
  private CheckpointChild() {}

  public static void main(String[] args) {
    try (Parallax db = Parallax.open(Path.of(args[0]), TestSupport.small());
        Region a = db.region("a"); Region bb = db.region("b")) {
      Thread writer = new Thread(() -> {
        for (long i = 0;; i++) {
          a.put(b("c" + i), b("v" + i));
          bb.put(b("c" + i), b("v" + i));
        }
      });
      writer.setDaemon(true);
      writer.start();
      for (long n = 0;; n++) {
        db.checkpoint(Path.of(args[1]));
        System.out.println("C " + n);
        System.out.flush();
      }
    }
  }
}
