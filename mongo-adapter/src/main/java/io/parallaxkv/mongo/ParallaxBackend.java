package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoDatabase;
import de.bwaldvogel.mongo.backend.AbstractMongoBackend;
import de.bwaldvogel.mongo.backend.DefaultQueryMatcher;
import de.bwaldvogel.mongo.backend.QueryMatcher;
import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import io.netty.channel.Channel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Predicate;

/**
 * The storage-engine swap: mongo-java-server's backend whose databases and collections live in
 * one Parallax volume ({@link MongoVolume}). Adds to the library's commands the ones whose
 * meaning depends on storage: {@code fsync}, and a refusal of {@code renameCollection}; and
 * authentication's ({@link Authenticator}).
 */
final class ParallaxBackend extends AbstractMongoBackend {
  private final MongoVolume volume;
  private final Authenticator authenticator;
  private final CursorReaper cursors;
  /** One object per database: the library asks again for every listDatabases. */
  private final Map<String, MongoDatabase> databases = new ConcurrentHashMap<>();

  ParallaxBackend(Path dbPath, boolean auth) {
    this.volume = new MongoVolume(dbPath);
    this.authenticator = new Authenticator(auth, new UserStore(volume.usersRegion()));
    this.cursors = new CursorReaper(getCursorRegistry(), CursorReaper.timeoutFromProperty());
    version(AdvertisedVersion.MONGO_4_4);
  }

  Authenticator authenticator() {
    return authenticator;
  }

  @Override
  protected MongoDatabase openOrCreateDatabase(String databaseName) {
    return databases.computeIfAbsent(databaseName,
        name -> new ParallaxDatabase(name, volume, getCursorRegistry(), cursors, authenticator));
  }

  @Override
  public void dropDatabase(String databaseName) {
    resolveDatabase(databaseName); // so that the library drops its collections from the volume
    super.dropDatabase(databaseName);
    databases.remove(databaseName);
  }

  /** The databases that hold a collection (as MongoDB lists them). */
  @Override
  protected Set<String> listDatabaseNames() {
    Set<String> names = new TreeSet<>();
    for (String ns : volume.namespaces()) names.add(Utils.getDatabaseNameFromFullName(ns));
    return names;
  }

  @Override
  public Document handleCommand(Channel channel, String databaseName, String command,
      Document query) {
    Document authReply = authenticator.handle(channel, databaseName, command, query);
    if (authReply != null) return authReply;
    if (command.equalsIgnoreCase("isMaster")) {
      Document reply = super.handleCommand(channel, databaseName, command, query);
      authenticator.describeMechanisms(query, reply);
      return reply;
    }
    if (command.equalsIgnoreCase("getMore") || command.equalsIgnoreCase("killCursors")) {
      boolean mayKillAny = command.equalsIgnoreCase("killCursors")
          && authenticator.mayKillAnyCursor(channel, databaseName);
      cursors.checkAccess(databaseName, command, query, authenticator.cursorOwner(channel),
          mayKillAny);
    }
    if (command.equalsIgnoreCase("listDatabases") && databaseName.equals("admin")) {
      return listDatabases(query, authenticator.listableDatabases(channel,
          query.get("authorizedDatabases")));
    }
    if (command.equalsIgnoreCase("fsync")) {
      volume.syncAll();
      Document response = new Document("numFiles", 1);
      Utils.markOkay(response);
      return response;
    }
    if (command.equalsIgnoreCase("renameCollection")) {
      // A collection is a region, and regions cannot be renamed (nor written atomically together).
      throw new MongoServerError(20, "IllegalOperation",
          "renameCollection is not supported by the Parallax storage engine");
    }
    return super.handleCommand(channel, databaseName, command, query);
  }

  /**
   * MongoDB's {@code listDatabases}: the databases {@code visible} lets the user see, each as
   * {@code {name, sizeOnDisk, empty}} — sizeOnDisk is the BSON bytes of its documents, the
   * engine keeping no per-region disk account — kept if they match {@code filter}, and only
   * their names with {@code nameOnly}.
   */
  private Document listDatabases(Document query, Predicate<String> visible) {
    Document filter = query.get("filter") instanceof Document f ? f : new Document();
    boolean nameOnly = Utils.isTrue(query.get("nameOnly"));
    Map<String, Long> sizes = new TreeMap<>();
    for (String ns : volume.namespaces()) {
      String db = Utils.getDatabaseNameFromFullName(ns);
      CollectionStore store = visible.test(db) ? volume.openExisting(ns) : null;
      if (store != null) sizes.merge(db, store.dataSize(), Long::sum);
    }
    QueryMatcher matcher = new DefaultQueryMatcher();
    List<Document> databases = new ArrayList<>();
    long totalSize = 0;
    for (Map.Entry<String, Long> db : sizes.entrySet()) {
      Document described = new Document("name", db.getKey()).append("sizeOnDisk", db.getValue())
          .append("empty", false);
      if (!matcher.matches(described, filter)) continue;
      databases.add(nameOnly ? new Document("name", db.getKey()) : described);
      totalSize += db.getValue();
    }
    Document response = new Document("databases", databases);
    if (!nameOnly) {
      response.append("totalSize", totalSize).append("totalSizeMb", totalSize >> 20);
    }
    Utils.markOkay(response);
    return response;
  }

  /** killCursors releases the snapshots of streaming cursors at once. */
  @Override
  protected Document handleKillCursors(Document query) {
    if (query.get("cursors") instanceof List<?> ids) {
      for (Object id : ids) {
        if (id instanceof Number n) cursors.kill(n.longValue());
      }
    }
    return super.handleKillCursors(query);
  }

  CursorReaper cursors() {
    return cursors;
  }

  @Override
  public void close() {
    cursors.close();
    super.close();
    volume.close();
  }
}
