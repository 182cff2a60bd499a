package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.Document;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * The {@link Roles.Action} each command needs on its database, as MongoDB's built-in roles
 * divide them. A command not named here needs {@link Roles.Action#CLUSTER} (root or
 * clusterAdmin): a command the table forgot is refused, never let through.
 */
final class CommandActions {
  /** Commands any authenticated user may run (lower case): the handshake and session plumbing. */
  private static final Set<String> OPEN = Set.of("hello", "ismaster", "saslstart", "saslcontinue",
      "ping", "buildinfo", "logout", "endsessions", "connectionstatus", "whatsmyuri",
      "getlasterror", "listcommands", "listdatabases");

  private static final Map<String, Roles.Action> ACTIONS = Map.ofEntries(
      Map.entry("find", Roles.Action.READ),
      Map.entry("getmore", Roles.Action.READ),
      Map.entry("killcursors", Roles.Action.READ),
      Map.entry("count", Roles.Action.READ),
      Map.entry("distinct", Roles.Action.READ),
      Map.entry("aggregate", Roles.Action.READ),
      Map.entry("explain", Roles.Action.READ),
      Map.entry("listcollections", Roles.Action.READ),
      Map.entry("listindexes", Roles.Action.READ),
      Map.entry("dbstats", Roles.Action.READ),
      Map.entry("collstats", Roles.Action.READ),
      Map.entry("datasize", Roles.Action.READ),
      Map.entry("insert", Roles.Action.WRITE),
      Map.entry("update", Roles.Action.WRITE),
      Map.entry("delete", Roles.Action.WRITE),
      Map.entry("findandmodify", Roles.Action.WRITE),
      Map.entry("create", Roles.Action.WRITE),
      Map.entry("createindexes", Roles.Action.WRITE),
      Map.entry("dropindexes", Roles.Action.WRITE),
      Map.entry("deleteindexes", Roles.Action.WRITE),
      Map.entry("drop", Roles.Action.WRITE),
      Map.entry("dropdatabase", Roles.Action.DB_ADMIN),
      Map.entry("validate", Roles.Action.DB_ADMIN),
      Map.entry("collmod", Roles.Action.DB_ADMIN),
      Map.entry("createuser", Roles.Action.USER_ADMIN),
      Map.entry("dropuser", Roles.Action.USER_ADMIN),
      Map.entry("usersinfo", Roles.Action.USER_ADMIN),
      Map.entry("updateuser", Roles.Action.USER_ADMIN),
      Map.entry("grantrolestouser", Roles.Action.USER_ADMIN),
      Map.entry("revokerolesfromuser", Roles.Action.USER_ADMIN),
      Map.entry("dropallusersfromdatabase", Roles.Action.USER_ADMIN));

  private CommandActions() {}

  /** Whether any authenticated user may run {@code command}. */
  static boolean isOpen(String command) {
    return OPEN.contains(command.toLowerCase(Locale.ROOT));
  }

  /**
   * The action {@code command} (its body {@code body}) needs: an aggregation that writes ({@code
   * $out}, {@code $merge}) is a write, an {@code explain} needs what the explained command needs.
   */
  static Roles.Action of(String command, Document body) {
    String lower = command.toLowerCase(Locale.ROOT);
    if (lower.equals("aggregate") && writes(body.get("pipeline"))) return Roles.Action.WRITE;
    if (lower.equals("explain") && body.get("explain") instanceof Document explained
        && !explained.isEmpty()) {
      String inner = explained.keySet().iterator().next();
      if (!inner.equalsIgnoreCase("explain")) return of(inner, explained);
    }
    return ACTIONS.getOrDefault(lower, Roles.Action.CLUSTER);
  }

  private static boolean writes(Object pipeline) {
    if (!(pipeline instanceof List<?> stages)) return false;
    for (Object stage : stages) {
      if (stage instanceof Document d && (d.containsKey("$out") || d.containsKey("$merge"))) {
        return true;
      }
    }
    return false;
  }
}
