package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * MongoDB's built-in roles, reduced to the actions this server checks: which {@link Action}s a
 * user's roles grant on which database. A role is named as in {@code createUser}: a string (a
 * role of the user's own database) or {@code {role, db}}. The "AnyDatabase" roles, {@code
 * clusterAdmin} and {@code root} exist only in {@code admin}, as in MongoDB; user-defined roles do
 * not exist here.
 */
final class Roles {
  /** What a command does to its database, in the granularity roles are checked at. */
  enum Action {
    /** Read documents, indexes and the catalog: find, aggregate, listCollections, … */
    READ,
    /** Change documents, indexes and collections: insert, update, createIndexes, drop, … */
    WRITE,
    /** Administer a database: dropDatabase, validate, … */
    DB_ADMIN,
    /** Create, drop and list a database's users. */
    USER_ADMIN,
    /** Whole-server commands: fsync, serverStatus, shutdown, and commands not classified. */
    CLUSTER
  }

  private static final Set<Action> EVERYTHING = EnumSet.allOf(Action.class);

  /** Roles of any database: the actions each grants on its own database. */
  private static final Map<String, Set<Action>> DATABASE_ROLES = Map.of(
      "read", EnumSet.of(Action.READ),
      "readWrite", EnumSet.of(Action.READ, Action.WRITE),
      "dbAdmin", EnumSet.of(Action.DB_ADMIN),
      "userAdmin", EnumSet.of(Action.USER_ADMIN),
      "dbOwner", EnumSet.of(Action.READ, Action.WRITE, Action.DB_ADMIN, Action.USER_ADMIN));

  /** Roles of the admin database only: the actions each grants on every database. */
  private static final Map<String, Set<Action>> SERVER_ROLES = Map.of(
      "readAnyDatabase", EnumSet.of(Action.READ),
      "readWriteAnyDatabase", EnumSet.of(Action.READ, Action.WRITE),
      "dbAdminAnyDatabase", EnumSet.of(Action.DB_ADMIN),
      "userAdminAnyDatabase", EnumSet.of(Action.USER_ADMIN),
      "clusterAdmin", EnumSet.of(Action.CLUSTER),
      "root", EVERYTHING);

  private Roles() {}

  /**
   * The roles of a {@code createUser} of database {@code userDb}, each as {@code {role, db}};
   * MongoDB's error 31 (RoleNotFound) for a role that does not exist, 2 (BadValue) for a
   * malformed one.
   */
  static List<Document> parse(String userDb, Object roles) {
    if (roles == null) return List.of();
    if (!(roles instanceof List<?> list)) {
      throw new MongoServerError(2, "BadValue", "roles must be an array");
    }
    List<Document> out = new ArrayList<>();
    for (Object r : list) {
      String name;
      String db;
      if (r instanceof String s) {
        name = s;
        db = userDb;
      } else if (r instanceof Document d && d.get("role") instanceof String s
          && d.get("db") instanceof String rdb) {
        name = s;
        db = rdb;
      } else {
        throw new MongoServerError(2, "BadValue", "a role is a name or {role: name, db: name}: " + r);
      }
      boolean exists = DATABASE_ROLES.containsKey(name)
          || (SERVER_ROLES.containsKey(name) && db.equals("admin"));
      if (!exists) {
        throw new MongoServerError(31, "RoleNotFound", "Could not find role: " + name + "@" + db);
      }
      out.add(new Document("role", name).append("db", db));
    }
    return out;
  }

  /**
   * Whether {@code roles} hold MongoDB's {@code listDatabases} action on the cluster: every
   * server role does (the AnyDatabase roles, clusterAdmin and root).
   */
  static boolean listsAllDatabases(List<Document> roles) {
    for (Document role : roles) {
      if (SERVER_ROLES.containsKey((String) role.get("role")) && "admin".equals(role.get("db"))) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code roles} grant anything at all on {@code db}. */
  static boolean grantsAnythingOn(List<Document> roles, String db) {
    if (listsAllDatabases(roles)) return true;
    for (Document role : roles) {
      if (DATABASE_ROLES.containsKey((String) role.get("role")) && db.equals(role.get("db"))) {
        return true;
      }
    }
    return false;
  }

  /** Whether {@code roles}, as {@link #parse} gives them, allow {@code action} on {@code db}. */
  static boolean grants(List<Document> roles, Action action, String db) {
    for (Document role : roles) {
      String name = (String) role.get("role");
      Set<Action> anywhere = SERVER_ROLES.get(name);
      if (anywhere != null && "admin".equals(role.get("db")) && anywhere.contains(action)) {
        return true;
      }
      Set<Action> here = DATABASE_ROLES.get(name);
      if (here != null && db.equals(role.get("db")) && here.contains(action)) return true;
    }
    return false;
  }
}
