package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.bson.Document;

/**
 * How a command's write concern maps to engine durability. {@code w:1} (the default) is
 * acknowledged once the engine accepted the write: it reaches disk with the next group commit.
 * {@code j:true} — and {@code w:"majority"}, which on a standalone MongoDB implies the journal —
 * is acknowledged only after the collection's region is synced.
 */
final class WriteConcerns {
  private WriteConcerns() {}

  static boolean journaled(Document command) {
    if (!(command.get("writeConcern") instanceof Document wc)) return false;
    return Utils.isTrue(wc.get("j")) || Utils.isTrue(wc.get("fsync"))
        || "majority".equals(wc.get("w"));
  }
}
