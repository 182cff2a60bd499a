package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Spliterator;
import java.util.Spliterators;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;

/**
 * Puts ties of an already sorted stream in {@code _id} order. An index whose leading fields give
 * a sort yields the documents that tie on those fields in the order of its further fields; the
 * in-memory sort orders them by {@code _id}. This makes both agree, so a query's order does not
 * depend on its plan, while holding only one run of tied documents at a time.
 */
final class TieOrder {
  private TieOrder() {}

  /**
   * {@code sorted} (already in {@code order}) with each run of documents that {@code order}
   * calls equal re-ordered by {@code byId}. Closing the result closes {@code sorted}.
   */
  static Stream<Document> byId(Stream<Document> sorted, Comparator<Document> order,
      Comparator<Document> byId) {
    Iterator<Document> in = sorted.iterator();
    Iterator<Document> out = new Iterator<>() {
      private final ArrayDeque<Document> run = new ArrayDeque<>();
      private Document pending; // the first document of the next run, already read

      @Override
      public boolean hasNext() {
        if (!run.isEmpty()) return true;
        Document first = pending != null ? pending : in.hasNext() ? in.next() : null;
        pending = null;
        if (first == null) return false;
        List<Document> tied = new ArrayList<>();
        tied.add(first);
        while (in.hasNext()) {
          Document d = in.next();
          if (order.compare(first, d) != 0) {
            pending = d;
            break;
          }
          tied.add(d);
        }
        tied.sort(byId);
        run.addAll(tied);
        return true;
      }

      @Override
      public Document next() {
        if (!hasNext()) throw new NoSuchElementException();
        return run.poll();
      }
    };
    return StreamSupport.stream(Spliterators.spliteratorUnknownSize(out,
        Spliterator.ORDERED | Spliterator.NONNULL), false).onClose(sorted::close);
  }
}
