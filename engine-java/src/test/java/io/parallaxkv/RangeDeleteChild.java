package io.parallaxkv;

import static io.parallaxkv.TestSupport.b;

import java.nio.file.Path;

/**
 * RangeDeleteTest's child process, until killed: round i puts keys i/0..i/9, deletes the range
 * [i/3, i/7) (alone, or in a batch with the put that follows), puts i/5 again, syncs, and
 * reports the round.
 */
final class RangeDeleteChild {
  private RangeDeleteChild() {}

  static byte[] key(long round, int k) {
    return b(String.format("r%06d/%d", round, k));
  }

  static byte[] value(long round, int k) {
    byte[] v = new byte[k == 9 ? 3000 : 200]; // a large value among small ones
    java.util.Arrays.fill(v, (byte) (round + k));
    return v;
  }

  public static void main(String[] args) {
    try (Parallax db = Parallax.open(Path.of(args[0]), TestSupport.small());
        Region r = db.region("r"); WriteBatch batch = new WriteBatch()) {
      for (long i = 0;; i++) {
        for (int k = 0; k < 10; k++) r.put(key(i, k), value(i, k));
        byte[] after = b("after " + i);
        if (i % 2 == 0) {
          r.deleteRange(key(i, 3), key(i, 7));
          r.put(key(i, 5), after, WriteOptions.SYNC);
        } else {
          batch.clear();
          r.write(batch.deleteRange(key(i, 3), key(i, 7)).put(key(i, 5), after), WriteOptions.SYNC);
        }
        System.out.println("D " + i);
        System.out.flush();
      }
    }
  }
}
