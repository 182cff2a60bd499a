package io.parallaxkv.systemtest;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Checks the reads of one key against its writes, treating the key as a register whose puts
 * write unique values and whose deletes write "absent" (as the initial state is). Every
 * operation is an interval [start, end] of System.nanoTime taken just before the call and just
 * after it returned. A read is accepted iff some write W could have produced what it saw:
 * <ul>
 *   <li>W started before the read ended, and</li>
 *   <li>no other write started after W ended and ended before the read started (such a write
 *       would have overwritten W before the read began).</li>
 * </ul>
 * An absent result may come from a delete, or from the initial state if no write ended before
 * the read started. This is the per-key (register) condition of linearizability.
 */
final class RegisterChecker {
  /** Value 0: a delete (write) or "absent" (read). */
  static final long ABSENT = 0;

  /** One operation on the key: its interval and the value it wrote or read. */
  record Op(long start, long end, long value) {}

  private RegisterChecker() {}

  /** Violations (at most {@code limit}), each a sentence naming the read and the write. */
  static List<String> check(String key, List<Op> writes, List<Op> reads, int limit) {
    int n = writes.size();
    Op[] w = writes.toArray(new Op[0]);
    Arrays.sort(w, (a, b) -> Long.compare(a.start(), b.start()));
    long[] starts = new long[n];
    for (int i = 0; i < n; i++) starts[i] = w[i].start();
    long[] suffixMinEnd = new long[n + 1];
    int[] suffixMinAt = new int[n + 1];
    suffixMinEnd[n] = Long.MAX_VALUE;
    suffixMinAt[n] = -1;
    for (int i = n - 1; i >= 0; i--) {
      boolean here = w[i].end() < suffixMinEnd[i + 1];
      suffixMinEnd[i] = here ? w[i].end() : suffixMinEnd[i + 1];
      suffixMinAt[i] = here ? i : suffixMinAt[i + 1];
    }
    // overwrittenBy[i]: of the writes that start after write i ends, the one that ends first.
    int[] overwrittenBy = new int[n];
    Map<Long, Integer> byValue = new HashMap<>();
    List<String> out = new ArrayList<>();
    for (int i = 0; i < n; i++) {
      overwrittenBy[i] = suffixMinAt[firstStartAfter(starts, w[i].end())];
      if (w[i].value() != ABSENT && byValue.put(w[i].value(), i) != null) {
        out.add(key + ": value " + w[i].value() + " was written twice");
      }
    }
    // Deletes in start order, with the latest "overwritten by" end among the first j of them.
    List<Integer> deletes = new ArrayList<>();
    for (int i = 0; i < n; i++) if (w[i].value() == ABSENT) deletes.add(i);
    long[] delStarts = new long[deletes.size()];
    long[] bestOverwriteEnd = new long[deletes.size()];
    for (int j = 0; j < deletes.size(); j++) {
      int i = deletes.get(j);
      delStarts[j] = w[i].start();
      long e = overwriteEnd(w, overwrittenBy, i);
      bestOverwriteEnd[j] = j == 0 ? e : Math.max(bestOverwriteEnd[j - 1], e);
    }

    for (Op r : reads) {
      if (out.size() >= limit) break;
      if (r.value() != ABSENT) {
        Integer i = byValue.get(r.value());
        if (i == null) {
          out.add(key + ": " + r + " read a value no put wrote");
        } else if (w[i].start() > r.end()) {
          out.add(key + ": " + r + " read the value of " + w[i] + ", which started after the read ended");
        } else if (overwriteEnd(w, overwrittenBy, i) < r.start()) {
          out.add(key + ": " + r + " read the value of " + w[i] + ", but " + w[overwrittenBy[i]]
              + " overwrote it before the read started");
        }
      } else {
        if (suffixMinEnd[0] >= r.start()) continue; // nothing was written yet
        int j = firstStartAfter(delStarts, r.end()) - 1;
        if (j < 0 || bestOverwriteEnd[j] < r.start()) {
          out.add(key + ": " + r + " found the key absent, but " + w[suffixMinAt[0]]
              + " ended before the read started and no delete can explain the absence");
        }
      }
    }
    return out;
  }

  private static long overwriteEnd(Op[] w, int[] overwrittenBy, int i) {
    return overwrittenBy[i] < 0 ? Long.MAX_VALUE : w[overwrittenBy[i]].end();
  }

  /** Index of the first element of the sorted {@code a} greater than {@code t}. */
  private static int firstStartAfter(long[] a, long t) {
    int lo = 0;
    int hi = a.length;
    while (lo < hi) {
      int mid = (lo + hi) >>> 1;
      if (a[mid] > t) hi = mid;
      else lo = mid + 1;
    }
    return lo;
  }
}
