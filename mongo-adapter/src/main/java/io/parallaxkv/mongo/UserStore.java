package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import io.parallaxkv.WriteOptions;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * The server's users, durable in their own region: key {@code db NUL user}, value the user's
 * document as MongoDB keeps it in {@code admin.system.users} — {@code {_id: "db.user", user, db,
 * roles, credentials: {"SCRAM-SHA-256": {iterationCount, salt, storedKey, serverKey}}}}, never a
 * password. Every change is a synced write, so an acknowledged createUser or dropUser survives a
 * crash. An in-memory copy, loaded at open, answers lookups.
 */
final class UserStore {
  static final String MECHANISM = "SCRAM-SHA-256";

  private final Region region;
  /** {@code "db\0user"} → the user's document; equal to the region at every instant. */
  private final Map<String, Document> users = new ConcurrentSkipListMap<>();

  UserStore(Region region) {
    this.region = region;
    try (Scanner s = region.scanner()) {
      for (; s.isValid(); s.next()) {
        users.put(new String(s.key(), StandardCharsets.UTF_8), BsonCodec.decode(s.value()));
      }
    }
  }

  boolean isEmpty() {
    return users.isEmpty();
  }

  /** The credential of {@code user} of database {@code db}, or null if there is no such user. */
  ScramCredential credential(String db, String user) {
    Document d = users.get(key(db, user));
    if (d == null) return null;
    return ScramCredential.fromDocument(
        (Document) ((Document) d.get("credentials")).get(MECHANISM));
  }

  /** The roles of {@code user} of database {@code db} as {@code {role, db}}; null if no such user. */
  List<Document> roles(String db, String user) {
    Document d = users.get(key(db, user));
    return d == null ? null : Roles.parse(db, d.get("roles"));
  }

  /** Adds a user with {@code roles} (as {@link Roles#parse} gives them); false if it exists. */
  synchronized boolean create(String db, String user, String password, List<Document> roles) {
    String key = key(db, user);
    if (users.containsKey(key)) return false;
    Document d = new Document("_id", db + "." + user).append("user", user).append("db", db)
        .append("roles", new ArrayList<>(roles))
        .append("credentials", new Document(MECHANISM, ScramCredential.derive(password).toDocument()));
    region.put(key.getBytes(StandardCharsets.UTF_8), BsonCodec.encode(d), WriteOptions.SYNC);
    users.put(key, d);
    return true;
  }

  /** Removes a user; false if there was none. */
  synchronized boolean drop(String db, String user) {
    String key = key(db, user);
    if (!users.containsKey(key)) return false;
    region.delete(key.getBytes(StandardCharsets.UTF_8), WriteOptions.SYNC);
    users.remove(key);
    return true;
  }

  /** The users of {@code db} (all databases if null), as usersInfo shows them: no credentials. */
  List<Document> describe(String db, String user) {
    List<Document> out = new ArrayList<>();
    for (Document d : users.values()) {
      if (db != null && !db.equals(d.get("db"))) continue;
      if (user != null && !user.equals(d.get("user"))) continue;
      out.add(new Document("_id", d.get("_id")).append("user", d.get("user"))
          .append("db", d.get("db")).append("roles", d.get("roles"))
          .append("mechanisms", List.of(MECHANISM)));
    }
    return out;
  }

  private static String key(String db, String user) {
    return db + '\0' + user;
  }
}
