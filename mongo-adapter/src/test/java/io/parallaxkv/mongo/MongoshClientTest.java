package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.parallaxkv.mongo.ExternalCommand.run;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.MessageDigest;
import java.util.HexFormat;
import io.parallaxkv.mongo.ExternalCommand.Result;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * mongosh (installed under target/ by {@code npm ci} from src/test/npm, whose package-lock.json
 * pins every transitive package: a fresh resolution of mongosh's ranges once picked a version
 * the registry did not serve yet) runs src/test/resources/mongosh_client.js
 * against the server: inserts, a descending and a multikey index, sorts, explain, an update
 * found through the index, 11000 (duplicate _id and unique index), validate, getIndexes,
 * dropIndex, bulkWrite with an upsert, findOneAndUpdate, a cursor across getMores, an
 * aggregation ($match, $group, $sort, $project, $limit), countDocuments, getCollectionNames,
 * drop, dropDatabase.
 */
class MongoshClientTest {
  private static final Path PREFIX = Path.of("target", "mongosh");
  private static final Path PACKAGE = Path.of("src", "test", "npm");

  @TempDir Path dir;

  @Test
  void mongoshScriptPasses() throws Exception {
    Path mongosh = installed();
    Path script = Path.of("src", "test", "resources", "mongosh_client.js");
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      Result r = run(List.of(mongosh.toString(), server.connectionString() + "/shell",
          "--quiet", "--norc", "--file", script.toString()), 120);
      assertEquals(0, r.exit(), r.output());
      assertTrue(r.output().contains("mongosh OK"), r.output());
    }
  }

  /** Installs the locked tree once; the marker names the lock's hash, so a new lock reinstalls. */
  private static Path installed() throws Exception {
    Path mongosh = PREFIX.resolve("node_modules").resolve(".bin").resolve("mongosh");
    byte[] lock = Files.readAllBytes(PACKAGE.resolve("package-lock.json"));
    String hash = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(lock));
    Path marker = PREFIX.resolve("installed-" + hash.substring(0, 16));
    if (Files.exists(marker)) return mongosh;
    Files.createDirectories(PREFIX);
    for (String f : List.of("package.json", "package-lock.json")) {
      Files.copy(PACKAGE.resolve(f), PREFIX.resolve(f), StandardCopyOption.REPLACE_EXISTING);
    }
    Result npm = run(List.of("npm", "ci", "--prefix", PREFIX.toString(), "--no-audit",
        "--no-fund", "--loglevel=error"), 600);
    assertEquals(0, npm.exit(), "npm ci (src/test/npm) failed:\n" + npm.output());
    Files.createFile(marker);
    return mongosh;
  }
}
