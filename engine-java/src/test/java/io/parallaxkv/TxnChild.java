package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;

import java.nio.file.Path;

/** TxnTest's child process: batches across two regions until killed, reporting each. */
final class TxnChild {
  private TxnChild() {}

  public static void main(String[] args) {
    try (Parallax db = Parallax.open(Path.of(args[0]), TestSupport.small());
        Region a = db.region("a"); Region bb = db.region("b"); WriteBatch batch = new WriteBatch()) {
      for (long i = 0;; i++) {
        batch.clear();
        for (Region r : new Region[] {a, bb}) {
          batch.put(r, b("b" + i), b("v" + i));
          batch.put(r, b("last"), b(Long.toString(i)));
        }
        db.write(batch);
        a.put(b("noise"), b(Long.toString(i)));
        System.out.println("B " + i);
        System.out.flush();
      }
    }
  }
}
