package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.MongoClientSettings;
import com.mongodb.MongoCommandException;
import com.mongodb.MongoCredential;
import com.mongodb.MongoSecurityException;
import com.mongodb.ServerAddress;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import com.mongodb.client.MongoCursor;
import io.parallaxkv.Options;
import io.parallaxkv.Parallax;
import io.parallaxkv.Region;
import io.parallaxkv.Scanner;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bson.BsonDocument;
import org.bson.BsonInt32;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SCRAM-SHA-256 with the Java driver: the localhost exception creates the first user; the right
 * password works (mechanism negotiated or named), a wrong one and an unknown user fail,
 * unauthenticated commands — over OP_MSG and legacy OP_QUERY — are refused with error 13; users
 * survive a restart, their stored form holds no password, and a dropped user cannot log in.
 */
class AuthTest {
  private static final String PASSWORD = "correct horse battery staple";

  @TempDir Path dir;

  @Test
  void scramSha256WithTheJavaDriver() throws Exception {
    int port;
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, "127.0.0.1", 0, true, false);
        MongoClient anonymous = MongoFixture.client(server.connectionString())) {
      port = server.port();
      MongoCommandException refused = assertThrows(MongoCommandException.class,
          () -> anonymous.getDatabase("app").getCollection("c").find().first());
      assertEquals(13, refused.getErrorCode());
      assertEquals(13, assertThrows(MongoCommandException.class,
          () -> anonymous.getDatabase("admin").runCommand(new Document("listDatabases", 1)))
          .getErrorCode());
      assertRefusedOverOpQuery(port, "app.$cmd", new BsonDocument("serverStatus", new BsonInt32(1)));
      assertRefusedOverOpQuery(port, "app.c", new BsonDocument());

      // The localhost exception: the first user, then no more without authenticating.
      anonymous.getDatabase("admin").runCommand(new Document("createUser", "root")
          .append("pwd", PASSWORD).append("roles", List.of("root")));
      assertEquals(13, assertThrows(MongoCommandException.class,
          () -> anonymous.getDatabase("admin").runCommand(new Document("createUser", "eve")
              .append("pwd", "x").append("roles", List.of()))).getErrorCode());
      // The handshake commands stay open.
      assertEquals(1.0, ((Number) anonymous.getDatabase("admin")
          .runCommand(new Document("ping", 1)).get("ok")).doubleValue());

      try (MongoClient root = client(port, MongoCredential.createCredential("root", "admin",
          PASSWORD.toCharArray()))) {
        MongoCollection<Document> c = root.getDatabase("app").getCollection("c");
        c.insertOne(new Document("_id", 1).append("v", "a"));
        assertEquals("a", c.find().first().getString("v"));
        root.getDatabase("app").runCommand(new Document("createUser", "reader")
            .append("pwd", "r34d3r").append("roles", List.of("read")));
        Document info = root.getDatabase("app").runCommand(new Document("usersInfo", "reader"));
        Document user = info.getList("users", Document.class).get(0);
        assertEquals("app.reader", user.getString("_id"));
        assertEquals(List.of("SCRAM-SHA-256"), user.getList("mechanisms", String.class));
        assertFalse(user.containsKey("credentials"), "usersInfo never shows credentials");
        assertEquals(51003, assertThrows(MongoCommandException.class,
            () -> root.getDatabase("app").runCommand(new Document("createUser", "reader")
                .append("pwd", "again").append("roles", List.of()))).getErrorCode());
      }

      assertLoginFails(port, MongoCredential.createScramSha256Credential("root", "admin",
          "wrong password".toCharArray()));
      assertLoginFails(port, MongoCredential.createScramSha256Credential("nobody", "admin",
          PASSWORD.toCharArray()));
      // An unknown user's exchange looks like a real one: a stable salt, failure at the proof.
      String first = serverFirst(anonymous, "nobody");
      assertEquals(saltOf(first), saltOf(serverFirst(anonymous, "nobody")));
      assertTrue(first.contains(",i=15000"), first);
      assertTrue(serverFirst(anonymous, "root").contains(",i=15000"));
      // A user of one database is not a user of another.
      assertLoginFails(port, MongoCredential.createScramSha256Credential("reader", "admin",
          "r34d3r".toCharArray()));
    }

    // The stored users hold salted keys, not the passwords.
    try (Parallax volume = Parallax.open(dir.resolve(MongoVolume.VOLUME_FILE), Options.DEFAULTS)) {
      Region users = volume.region("auth/users");
      int count = 0;
      try (Scanner s = users.scanner()) {
        for (; s.isValid(); s.next(), count++) {
          String value = new String(s.value(), StandardCharsets.ISO_8859_1);
          assertFalse(value.contains(PASSWORD) || value.contains("r34d3r"), "plaintext stored");
          assertTrue(value.contains("storedKey") && value.contains("serverKey"), value);
        }
      }
      assertEquals(2, count);
    }

    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, "127.0.0.1", 0, true, false)) {
      port = server.port();
      try (MongoClient reader = client(port, MongoCredential.createScramSha256Credential(
              "reader", "app", "r34d3r".toCharArray()))) {
        assertEquals("a", reader.getDatabase("app").getCollection("c").find().first()
            .getString("v"), "users and data survive a restart");
      }
      try (MongoClient root = client(port, MongoCredential.createScramSha256Credential("root",
          "admin", PASSWORD.toCharArray()))) {
        root.getDatabase("app").runCommand(new Document("dropUser", "reader"));
        assertEquals(11, assertThrows(MongoCommandException.class,
            () -> root.getDatabase("app").runCommand(new Document("dropUser", "reader")))
            .getErrorCode());
      }
      assertLoginFails(port, MongoCredential.createScramSha256Credential("reader", "app",
          "r34d3r".toCharArray()));
    }
  }

  @Test
  void rolesAreEnforcedWithTheJavaDriver() {
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, "127.0.0.1", 0, true, false)) {
      int port = server.port();
      assertTrue(server.createUser("admin", "root", PASSWORD));
      long otherCursor;
      try (MongoClient root = client(port, MongoCredential.createCredential("root", "admin",
          PASSWORD.toCharArray()))) {
        root.getDatabase("app").getCollection("c").insertOne(new Document("_id", 1));
        root.getDatabase("other").getCollection("c").insertMany(List.of(new Document("_id", 1),
            new Document("_id", 2), new Document("_id", 3)));
        otherCursor = root.getDatabase("other").runCommand(new Document("find", "c")
            .append("batchSize", 1)).get("cursor", Document.class).getLong("id");
        assertTrue(otherCursor != 0);
        root.getDatabase("app").runCommand(new Document("createUser", "reader")
            .append("pwd", "r").append("roles", List.of("read")));
        root.getDatabase("app").runCommand(new Document("createUser", "writer")
            .append("pwd", "w").append("roles", List.of("readWrite",
                new Document("role", "read").append("db", "other"))));
        root.getDatabase("app").runCommand(new Document("createUser", "owner")
            .append("pwd", "o").append("roles", List.of("dbOwner")));
        assertEquals(31, assertThrows(MongoCommandException.class,
            () -> root.getDatabase("app").runCommand(new Document("createUser", "x")
                .append("pwd", "x").append("roles", List.of("noSuchRole")))).getErrorCode());
        assertEquals(31, assertThrows(MongoCommandException.class,
            () -> root.getDatabase("app").runCommand(new Document("createUser", "x")
                .append("pwd", "x").append("roles", List.of("root")))).getErrorCode(),
            "root is a role of admin only");
        assertEquals(List.of(new Document("role", "read").append("db", "app")),
            root.getDatabase("app").runCommand(new Document("usersInfo", "reader"))
                .getList("users", Document.class).get(0).getList("roles", Document.class));
      }

      try (MongoClient reader = client(port, MongoCredential.createScramSha256Credential(
          "reader", "app", "r".toCharArray()))) {
        MongoCollection<Document> c = reader.getDatabase("app").getCollection("c");
        assertEquals(1, c.countDocuments());
        assertEquals(1, c.find().into(new java.util.ArrayList<>()).size());
        assertEquals(1, c.listIndexes().into(new java.util.ArrayList<>()).size());
        assertUnauthorized(() -> c.insertOne(new Document("_id", 2)));
        assertUnauthorized(() -> c.updateOne(new Document("_id", 1),
            new Document("$set", new Document("v", 1))));
        assertUnauthorized(() -> c.deleteOne(new Document("_id", 1)));
        assertUnauthorized(() -> c.createIndex(new Document("v", 1)));
        assertUnauthorized(() -> c.drop());
        assertUnauthorized(() -> c.aggregate(List.of(new Document("$out", "copy"))).toCollection());
        assertUnauthorized(() -> reader.getDatabase("other").getCollection("c").find().first());
        assertUnauthorized(() -> reader.getDatabase("app").runCommand(
            new Document("createUser", "y").append("pwd", "y").append("roles", List.of("read"))));
        assertUnauthorized(() -> reader.getDatabase("admin").runCommand(new Document("fsync", 1)));
        // Another database's cursor, named through a database the reader may read.
        assertUnauthorized(() -> reader.getDatabase("app").runCommand(
            new Document("getMore", otherCursor).append("collection", "c")));
        assertUnauthorized(() -> reader.getDatabase("app").runCommand(
            new Document("killCursors", "c").append("cursors", List.of(otherCursor))));
      }

      try (MongoClient writer = client(port, MongoCredential.createScramSha256Credential(
          "writer", "app", "w".toCharArray()))) {
        MongoCollection<Document> c = writer.getDatabase("app").getCollection("c");
        c.insertOne(new Document("_id", 2));
        c.createIndex(new Document("v", 1));
        c.updateOne(new Document("_id", 2), new Document("$set", new Document("v", 2)));
        assertEquals(2, c.countDocuments());
        assertEquals(3, writer.getDatabase("other").getCollection("c").countDocuments());
        assertUnauthorized(() -> writer.getDatabase("other").getCollection("c")
            .insertOne(new Document("_id", 2)));
        assertUnauthorized(() -> writer.getDatabase("app").drop());
        assertUnauthorized(() -> writer.getDatabase("app").runCommand(new Document("dropUser", "reader")));
      }

      try (MongoClient owner = client(port, MongoCredential.createScramSha256Credential(
          "owner", "app", "o".toCharArray()))) {
        owner.getDatabase("app").runCommand(new Document("dropUser", "writer"));
        owner.getDatabase("app").drop();
        assertUnauthorized(() -> owner.getDatabase("other").getCollection("c").find().first());
      }
      assertLoginFails(port, MongoCredential.createScramSha256Credential("writer", "app",
          "w".toCharArray()));
    }
  }

  /**
   * A cursor belongs to the user who opened it, as in MongoDB: another user's getMore is refused
   * with 13 even when it may read the collection, and so is root's; another user's killCursors is
   * refused as a whole (the cursor lives on), root's (killAnyCursor) is not.
   */
  @Test
  void cursorsBelongToTheUserWhoOpenedThem() {
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, "127.0.0.1", 0, true, false)) {
      int port = server.port();
      assertTrue(server.createUser("admin", "root", PASSWORD));
      try (MongoClient root = client(port, MongoCredential.createCredential("root", "admin",
          PASSWORD.toCharArray()))) {
        List<Document> docs = new java.util.ArrayList<>();
        for (int i = 0; i < 20; i++) docs.add(new Document("_id", i));
        root.getDatabase("app").getCollection("c").insertMany(docs);
        for (String user : List.of("alice", "bob")) {
          root.getDatabase("app").runCommand(new Document("createUser", user)
              .append("pwd", user).append("roles", List.of("read")));
        }
      }
      try (MongoClient alice = client(port, MongoCredential.createScramSha256Credential(
              "alice", "app", "alice".toCharArray()));
          MongoClient bob = client(port, MongoCredential.createScramSha256Credential(
              "bob", "app", "bob".toCharArray()));
          MongoClient root = client(port, MongoCredential.createCredential("root", "admin",
              PASSWORD.toCharArray()))) {
        MongoCursor<Document> mine = alice.getDatabase("app").getCollection("c").find()
            .batchSize(2).iterator();
        assertEquals(0, mine.next().getInteger("_id"));
        long id = mine.getServerCursor().getId();
        Document getMore = new Document("getMore", id).append("collection", "c")
            .append("batchSize", 2);
        Document kill = new Document("killCursors", "c").append("cursors", List.of(id));

        MongoCommandException refused = assertThrows(MongoCommandException.class,
            () -> bob.getDatabase("app").runCommand(getMore));
        assertEquals(13, refused.getErrorCode());
        assertTrue(refused.getMessage().contains("was not created by the authenticated user"),
            refused.getMessage());
        assertUnauthorized(() -> bob.getDatabase("app").runCommand(kill));
        assertUnauthorized(() -> root.getDatabase("app").runCommand(getMore));
        // Bob's attempts changed nothing: Alice reads on.
        for (int i = 1; i < 6; i++) assertEquals(i, mine.next().getInteger("_id"));

        Document killed = root.getDatabase("app").runCommand(kill);
        assertEquals(List.of(id), killed.getList("cursorsKilled", Long.class));
        assertThrows(com.mongodb.MongoCursorNotFoundException.class, () -> {
          while (mine.hasNext()) mine.next();
        });
        mine.close();

        // A user's own killCursors, and getMore on its own cursor, work.
        MongoCursor<Document> second = alice.getDatabase("app").getCollection("c").find()
            .batchSize(2).iterator();
        second.next();
        long secondId = second.getServerCursor().getId();
        assertEquals(2, alice.getDatabase("app").runCommand(new Document("getMore", secondId)
            .append("collection", "c").append("batchSize", 2)).get("cursor", Document.class)
            .getList("nextBatch", Document.class).size());
        assertEquals(List.of(secondId), alice.getDatabase("app").runCommand(
            new Document("killCursors", "c").append("cursors", List.of(secondId)))
            .getList("cursorsKilled", Long.class));
        second.close();
      }
    }
  }

  /**
   * listDatabases as MongoDB answers it: a user without the listDatabases privilege sees the
   * databases its roles grant something on (and is refused the full list when it insists with
   * authorizedDatabases: false); a readAnyDatabase user sees all; nameOnly and filter are honoured.
   */
  @Test
  void listDatabasesShowsTheDatabasesAUserMaySee() {
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, "127.0.0.1", 0, true, false)) {
      int port = server.port();
      assertTrue(server.createUser("admin", "root", PASSWORD));
      try (MongoClient root = client(port, MongoCredential.createCredential("root", "admin",
          PASSWORD.toCharArray()))) {
        for (String db : List.of("app", "other", "third")) {
          root.getDatabase(db).getCollection("c").insertOne(new Document("_id", 1)
              .append("pad", "x".repeat(db.equals("third") ? 1000 : 10)));
        }
        root.getDatabase("app").runCommand(new Document("createUser", "mixed").append("pwd", "m")
            .append("roles", List.of("read", new Document("role", "readWrite").append("db", "other"))));
        root.getDatabase("app").runCommand(new Document("createUser", "none").append("pwd", "n")
            .append("roles", List.of()));
        root.getDatabase("admin").runCommand(new Document("createUser", "any").append("pwd", "a")
            .append("roles", List.of("readAnyDatabase")));

        List<String> all = List.of("app", "other", "third");
        assertEquals(all, root.listDatabaseNames().into(new java.util.ArrayList<>()));
        Document full = root.listDatabases().first();
        assertEquals("app", full.getString("name"));
        assertEquals(Boolean.FALSE, full.getBoolean("empty"));
        assertTrue(((Number) full.get("sizeOnDisk")).longValue() > 0, full.toJson());
        assertEquals(List.of(new Document("name", "app")),
            root.listDatabases().nameOnly(true).filter(new Document("name", "app"))
                .into(new java.util.ArrayList<>()));
        assertEquals(List.of("other"), root.listDatabases().nameOnly(true)
            .filter(new Document("name", new Document("$regex", "^o"))).map(d -> d.getString("name"))
            .into(new java.util.ArrayList<>()));
        assertEquals(List.of("third"), root.listDatabases()
            .filter(new Document("sizeOnDisk", new Document("$gt", 500)))
            .map(d -> d.getString("name")).into(new java.util.ArrayList<>()));
      }
      try (MongoClient mixed = client(port, MongoCredential.createScramSha256Credential("mixed",
          "app", "m".toCharArray()))) {
        assertEquals(List.of("app", "other"), mixed.listDatabaseNames().into(new java.util.ArrayList<>()));
        assertEquals(List.of("app", "other"), mixed.listDatabases().authorizedDatabasesOnly(true)
            .map(d -> d.getString("name")).into(new java.util.ArrayList<>()));
        assertUnauthorized(() -> mixed.getDatabase("admin").runCommand(
            new Document("listDatabases", 1).append("authorizedDatabases", false)));
      }
      try (MongoClient none = client(port, MongoCredential.createScramSha256Credential("none",
          "app", "n".toCharArray()))) {
        assertEquals(List.of(), none.listDatabaseNames().into(new java.util.ArrayList<>()));
      }
      try (MongoClient any = client(port, MongoCredential.createScramSha256Credential("any",
          "admin", "a".toCharArray()))) {
        assertEquals(List.of("app", "other", "third"),
            any.listDatabaseNames().into(new java.util.ArrayList<>()));
        assertEquals(3, any.getDatabase("admin").runCommand(new Document("listDatabases", 1)
            .append("authorizedDatabases", false)).getList("databases", Document.class).size());
      }
    }
  }

  private static void assertUnauthorized(org.junit.jupiter.api.function.Executable command) {
    MongoCommandException e = assertThrows(MongoCommandException.class, command);
    assertEquals(13, e.getErrorCode(), e.getMessage());
  }

  @Test
  void withoutAuthTheUserCommandsStillWorkButNothingIsChecked() {
    try (MongoFixture f = new MongoFixture(dir)) {
      f.client.getDatabase("admin").runCommand(new Document("createUser", "u")
          .append("pwd", "p").append("roles", List.of()));
      f.client.getDatabase("app").getCollection("c").insertOne(new Document("_id", 1));
      assertEquals(1, f.client.getDatabase("app").getCollection("c").countDocuments());
      assertEquals(1, f.client.getDatabase("admin").runCommand(new Document("usersInfo", 1))
          .getList("users", Document.class).size());
    }
  }

  /** The server-first message of a saslStart for {@code user} of admin. */
  private static String serverFirst(MongoClient client, String user) {
    Document reply = client.getDatabase("admin").runCommand(new Document("saslStart", 1)
        .append("mechanism", "SCRAM-SHA-256").append("payload",
            new org.bson.types.Binary(("n,,n=" + user + ",r=clientnonce").getBytes(StandardCharsets.UTF_8))));
    assertEquals(Boolean.FALSE, reply.getBoolean("done"));
    return new String(reply.get("payload", org.bson.types.Binary.class).getData(),
        StandardCharsets.UTF_8);
  }

  private static String saltOf(String serverFirst) {
    return serverFirst.replaceAll(".*,s=([^,]*),.*", "$1");
  }

  private static MongoClient client(int port, MongoCredential credential) {
    return MongoClients.create(MongoClientSettings.builder()
        .applyToClusterSettings(b -> b.hosts(List.of(new ServerAddress("127.0.0.1", port)))
            .serverSelectionTimeout(10, TimeUnit.SECONDS))
        .credential(credential)
        .build());
  }

  private static void assertLoginFails(int port, MongoCredential credential) {
    try (MongoClient client = client(port, credential)) {
      MongoSecurityException e = assertThrows(MongoSecurityException.class,
          () -> client.getDatabase("app").getCollection("c").find().first());
      assertTrue(String.valueOf(e.getCause()).contains("Authentication failed"), e.toString());
    }
  }

  /** A legacy OP_QUERY on {@code namespace} gets an OP_REPLY whose document is error 13. */
  private static void assertRefusedOverOpQuery(int port, String namespace, BsonDocument query)
      throws Exception {
    try (Socket s = new Socket("127.0.0.1", port)) {
      s.setSoTimeout(10_000);
      BsonDocument reply = LegacyOpQuery.send(s, namespace, query, 0, -1).documents().get(0);
      assertEquals(13, reply.getInt32("code").getValue(), namespace + ": " + reply);
    }
  }
}
