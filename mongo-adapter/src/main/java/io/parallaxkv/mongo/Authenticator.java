package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.backend.Utils;
import de.bwaldvogel.mongo.bson.BinData;
import de.bwaldvogel.mongo.bson.Document;
import de.bwaldvogel.mongo.exception.MongoServerError;
import io.netty.channel.Channel;
import io.netty.util.AttributeKey;
import java.net.InetSocketAddress;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Authentication: SCRAM-SHA-256 over {@code saslStart}/{@code saslContinue}, the user commands
 * ({@code createUser}, {@code dropUser}, {@code usersInfo}), and — when it is on — the rule that
 * a connection runs nothing but the handshake until it has authenticated.
 *
 * <p>An authenticated user may run what its roles allow on the command's database ({@link Roles},
 * {@link CommandActions}); the roles are looked up at every command, so a dropped user loses its
 * rights at once. While no user exists, a connection from a loopback address may run {@code
 * createUser} unauthenticated: MongoDB's localhost exception, which is how the first user gets in.
 */
final class Authenticator {
  /** Commands a connection may run before authenticating (lower case). */
  private static final Set<String> HANDSHAKE = Set.of("hello", "ismaster", "saslstart",
      "saslcontinue", "ping", "buildinfo", "logout", "endsessions");
  /** The user a connection authenticated as: {@code db NUL user}. */
  private static final AttributeKey<String> USER = AttributeKey.valueOf("parallax.user");
  private static final AttributeKey<ScramConversation> CONVERSATION =
      AttributeKey.valueOf("parallax.scram");
  /** The database whose user the conversation authenticates. */
  private static final AttributeKey<String> CONVERSATION_DB =
      AttributeKey.valueOf("parallax.scram.db");
  private static final int CONVERSATION_ID = 1;

  private final boolean required;
  private final UserStore users;

  Authenticator(boolean required, UserStore users) {
    this.required = required;
    this.users = users;
  }

  UserStore users() {
    return users;
  }

  /**
   * Why {@code channel} may not run {@code command} (body {@code body}) on database {@code db},
   * or null if it may. Refusals are MongoDB's error 13 (Unauthorized).
   */
  String refusal(Channel channel, String db, String command, Document body) {
    if (!required) return null;
    String user = channel.attr(USER).get();
    if (user == null) {
      String lower = command.toLowerCase(Locale.ROOT);
      if (HANDSHAKE.contains(lower)) return null;
      if (lower.equals("createuser") && users.isEmpty() && isLoopback(channel)) return null;
      return "command " + command + " requires authentication";
    }
    if (CommandActions.isOpen(command)) return null;
    List<Document> roles = roles(channel);
    if (roles != null && Roles.grants(roles, CommandActions.of(command, body), db)) return null;
    return "not authorized on " + db + " to execute command { " + command + " }";
  }

  /**
   * Who owns the cursors {@code channel} opens now: its authenticated user ({@code db NUL user}),
   * or null when authentication is off (then any connection may use any cursor, as in MongoDB).
   */
  String cursorOwner(Channel channel) {
    return required ? channel.attr(USER).get() : null;
  }

  /**
   * Whether {@code channel}'s user may kill cursors of other users: MongoDB's {@code
   * killAnyCursor}, which {@code root} and {@code clusterAdmin} grant.
   */
  boolean mayKillAnyCursor(Channel channel, String db) {
    List<Document> roles = roles(channel);
    return roles != null && Roles.grants(roles, Roles.Action.CLUSTER, db);
  }

  /**
   * The databases {@code listDatabases} shows {@code channel}'s user, as MongoDB decides with
   * its {@code authorizedDatabases} option ({@code authorized}: true, false or null when unset):
   * every database to a user with the {@code listDatabases} privilege unless it asks for its
   * authorized ones only; to any other user the databases its roles grant something on, or error
   * 13 if it asked for all. Every database when authentication is off.
   */
  Predicate<String> listableDatabases(Channel channel, Object authorized) {
    if (!required) return db -> true;
    List<Document> roles = roles(channel);
    if (roles == null) return db -> false;
    boolean privileged = Roles.listsAllDatabases(roles);
    if (authorized != null && !Utils.isTrue(authorized) && !privileged) {
      throw new MongoServerError(13, "Unauthorized",
          "not authorized on admin to execute command { listDatabases } with "
              + "authorizedDatabases: false");
    }
    if (privileged && !Utils.isTrue(authorized)) return db -> true;
    return db -> Roles.grantsAnythingOn(roles, db);
  }

  /** The roles of {@code channel}'s authenticated user; null if it has not authenticated. */
  private List<Document> roles(Channel channel) {
    String user = channel.attr(USER).get();
    if (user == null) return null;
    int nul = user.indexOf('\0');
    return users.roles(user.substring(0, nul), user.substring(nul + 1));
  }

  /** Runs {@code command} if it is one of authentication's; null if it is not. */
  Document handle(Channel channel, String db, String command, Document query) {
    switch (command.toLowerCase(Locale.ROOT)) {
      case "saslstart":
        return saslStart(channel, db, query);
      case "saslcontinue":
        return saslContinue(channel, query);
      case "logout":
        channel.attr(USER).set(null);
        return ok(new Document());
      case "createuser":
        return createUser(db, query);
      case "dropuser":
        return dropUser(db, query);
      case "usersinfo":
        return usersInfo(db, query);
      case "updateuser":
      case "grantrolestouser":
      case "revokerolesfromuser":
      case "dropallusersfromdatabase":
        throw new MongoServerError(115, "CommandNotSupported",
            command + " is not supported; drop and create the user instead");
      default:
        return null;
    }
  }

  /**
   * Adds to a handshake reply what a driver asked for with {@code saslSupportedMechs: "db.user"}:
   * the mechanisms the user has (drivers pick SCRAM-SHA-256 from it, and would otherwise try
   * SCRAM-SHA-1).
   */
  void describeMechanisms(Document handshake, Document reply) {
    if (!(handshake.get("saslSupportedMechs") instanceof String name)) return;
    int dot = name.indexOf('.');
    if (dot < 0) return;
    if (users.credential(name.substring(0, dot), name.substring(dot + 1)) != null) {
      reply.put("saslSupportedMechs", List.of(UserStore.MECHANISM));
    }
  }

  private Document saslStart(Channel channel, String db, Document query) {
    Object mechanism = query.get("mechanism");
    if (!UserStore.MECHANISM.equals(mechanism)) {
      throw new MongoServerError(2, "BadValue", "Received authentication for mechanism "
          + mechanism + " which is not enabled; this server supports " + UserStore.MECHANISM);
    }
    channel.attr(CONVERSATION).set(null);
    ScramConversation conversation;
    try {
      conversation = ScramConversation.start(payload(query), user -> users.credential(db, user));
    } catch (ScramConversation.AuthenticationFailed e) {
      throw authenticationFailed(e);
    }
    channel.attr(CONVERSATION).set(conversation);
    channel.attr(CONVERSATION_DB).set(db);
    return saslReply(conversation.serverFirst(), false);
  }

  private Document saslContinue(Channel channel, Document query) {
    ScramConversation conversation = channel.attr(CONVERSATION).get();
    Object id = query.get("conversationId");
    if (conversation == null || !(id instanceof Number n) || n.intValue() != CONVERSATION_ID) {
      throw new MongoServerError(17, "ProtocolError", "No SASL session state found");
    }
    try {
      if (conversation.proven()) {
        conversation.finish();
        channel.attr(CONVERSATION).set(null);
        return saslReply(new byte[0], true);
      }
      byte[] serverFinal = conversation.verify(payload(query));
      channel.attr(USER).set(channel.attr(CONVERSATION_DB).get() + '\0' + conversation.user());
      // MongoDB ends the exchange here when the client asked to skip the empty last round.
      boolean skipEmpty = query.get("options") instanceof Document o
          && Utils.isTrue(o.get("skipEmptyExchange"));
      if (skipEmpty) channel.attr(CONVERSATION).set(null);
      return saslReply(serverFinal, skipEmpty);
    } catch (ScramConversation.AuthenticationFailed e) {
      channel.attr(CONVERSATION).set(null);
      throw authenticationFailed(e);
    }
  }

  private Document createUser(String db, Document query) {
    String user = userName(query.get("createUser"));
    if (!(query.get("pwd") instanceof String password)) {
      throw new MongoServerError(2, "BadValue", "createUser needs a pwd (this server stores "
          + "SCRAM-SHA-256 credentials, derived from the password)");
    }
    if (query.get("mechanisms") instanceof List<?> mechanisms
        && !mechanisms.equals(List.of(UserStore.MECHANISM))) {
      throw new MongoServerError(2, "BadValue", "only " + UserStore.MECHANISM + " is supported");
    }
    List<Document> roles = Roles.parse(db, query.get("roles"));
    boolean created;
    try {
      created = users.create(db, user, password, roles);
    } catch (IllegalArgumentException e) {
      throw new MongoServerError(2, "BadValue", e.getMessage());
    }
    if (!created) {
      throw new MongoServerError(51003, "Location51003", "User \"" + user + "@" + db
          + "\" already exists");
    }
    return ok(new Document());
  }

  private Document dropUser(String db, Document query) {
    String user = userName(query.get("dropUser"));
    if (!users.drop(db, user)) {
      throw new MongoServerError(11, "UserNotFound", "User '" + user + "@" + db + "' not found");
    }
    return ok(new Document());
  }

  private Document usersInfo(String db, Document query) {
    Object which = query.get("usersInfo");
    List<Document> found;
    if (which instanceof String user) {
      found = users.describe(db, user);
    } else if (which instanceof Document d && d.get("user") instanceof String user) {
      found = users.describe(d.get("db") instanceof String userDb ? userDb : db, user);
    } else if (which instanceof Document d && Utils.isTrue(d.get("forAllDBs"))) {
      found = users.describe(null, null);
    } else {
      found = users.describe(db, null);
    }
    return ok(new Document("users", found));
  }

  private static String userName(Object value) {
    if (!(value instanceof String user) || user.isEmpty() || user.indexOf('\0') >= 0) {
      throw new MongoServerError(2, "BadValue", "a user name is a non-empty string without NUL");
    }
    return user;
  }

  private static byte[] payload(Document query) {
    Object payload = query.get("payload");
    if (payload instanceof BinData b) return b.getData();
    if (payload instanceof String s) return s.getBytes(java.nio.charset.StandardCharsets.UTF_8);
    throw new MongoServerError(2, "BadValue", "a SASL payload is binary data");
  }

  private static Document saslReply(byte[] payload, boolean done) {
    return ok(new Document("conversationId", CONVERSATION_ID).append("done", done)
        .append("payload", new BinData(payload)));
  }

  private static MongoServerError authenticationFailed(Exception e) {
    return new MongoServerError(18, "AuthenticationFailed", e.getMessage());
  }

  private static Document ok(Document reply) {
    Utils.markOkay(reply);
    return reply;
  }

  private static boolean isLoopback(Channel channel) {
    return channel.remoteAddress() instanceof InetSocketAddress a
        && a.getAddress() != null && a.getAddress().isLoopbackAddress();
  }
}
