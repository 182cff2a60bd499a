package io.parallaxkv.mongo;

import com.mongodb.ConnectionString;
import com.mongodb.MongoClientSettings;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

/** A server on 127.0.0.1 and a free port over a volume in {@code dir}, and a driver client. */
final class MongoFixture implements AutoCloseable {
  final Path dir;
  final ParallaxMongoServer server;
  final MongoClient client;

  MongoFixture(Path dir) {
    this.dir = dir;
    this.server = ParallaxMongoServer.start(dir, 0);
    this.client = client(server.connectionString());
  }

  static MongoClient client(String uri) {
    return MongoClients.create(MongoClientSettings.builder()
        .applyConnectionString(new ConnectionString(uri))
        .applyToClusterSettings(b -> b.serverSelectionTimeout(10, TimeUnit.SECONDS))
        .applyToSocketSettings(b -> b.connectTimeout(5, TimeUnit.SECONDS)
            .readTimeout(60, TimeUnit.SECONDS))
        .build());
  }

  @Override
  public void close() {
    client.close();
    server.close();
  }
}
