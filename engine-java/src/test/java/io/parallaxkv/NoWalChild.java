package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;

import java.nio.file.Path;

/** NoWalTest's child process: writes until it is killed, reporting on stdout. */
final class NoWalChild {
  private NoWalChild() {}

  public static void main(String[] args) {
    try (Parallax db = Parallax.open(Path.of(args[0]), TestSupport.small());
        Region r = db.region("r")) {
      int n = 5000;
      for (int i = 0; i < n; i++) r.put(b("pre" + i), b("v" + i), WriteOptions.NO_WAL);
      r.flush();
      System.out.println("F " + n);
      for (int i = 0;; i++) {
        for (int j = 0; j < 20; j++) r.put(b("after" + i + "-" + j), b("x"), WriteOptions.NO_WAL);
        r.put(b("sync" + i), b("s" + i), WriteOptions.SYNC);
        System.out.println("S " + i);
        System.out.flush();
      }
    }
  }
}
