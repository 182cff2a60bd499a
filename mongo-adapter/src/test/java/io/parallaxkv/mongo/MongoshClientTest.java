package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static io.parallaxkv.mongo.ExternalCommand.run;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import io.parallaxkv.mongo.ExternalCommand.Result;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * mongosh (pinned, installed from npm under target/) runs src/test/resources/mongosh_client.js
 * against the server: inserts, a descending and a multikey index, sorts, explain, an update
 * found through the index, 11000 (duplicate _id and unique index), validate, getIndexes,
 * dropIndex, bulkWrite with an upsert, findOneAndUpdate, a cursor across getMores, an
 * aggregation ($match, $group, $sort, $project, $limit), countDocuments, getCollectionNames,
 * drop, dropDatabase.
 */
class MongoshClientTest {
  private static final Path PREFIX = Path.of("target", "mongosh");

  @TempDir Path dir;

  @Test
  void mongoshScriptPasses() throws Exception {
    String version = System.getProperty("mongo.mongosh.version", "2.12.0");
    Path mongosh = installed(version);
    Path script = Path.of("src", "test", "resources", "mongosh_client.js");
    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir, 0)) {
      Result r = run(List.of(mongosh.toString(), server.connectionString() + "/shell",
          "--quiet", "--norc", "--file", script.toString()), 120);
      assertEquals(0, r.exit(), r.output());
      assertTrue(r.output().contains("mongosh OK"), r.output());
    }
  }

  private static Path installed(String version) throws Exception {
    Path mongosh = PREFIX.resolve("node_modules").resolve(".bin").resolve("mongosh");
    Path marker = PREFIX.resolve("mongosh-" + version);
    if (Files.exists(marker)) return mongosh;
    Files.createDirectories(PREFIX);
    Result npm = run(List.of("npm", "install", "--prefix", PREFIX.toString(), "--no-audit",
        "--no-fund", "--loglevel=error", "mongosh@" + version), 600);
    assertEquals(0, npm.exit(), "npm install mongosh@" + version + " failed:\n" + npm.output());
    Files.createFile(marker);
    return mongosh;
  }
}
