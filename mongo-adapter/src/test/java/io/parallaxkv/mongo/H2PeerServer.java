package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.MongoServer;
import de.bwaldvogel.mongo.backend.h2.H2Backend;
import java.util.concurrent.CountDownLatch;

/**
 * The JVM peer of the side-by-side YCSB benchmark (bench/ycsb-side-by-side.sh):
 * mongo-java-server with its on-disk H2 MVStore backend, advertising the same version as this
 * server so that the same drivers talk to both. {@code H2PeerServer FILE PORT}; runs until killed (SIGTERM closes the
 * store).
 */
public final class H2PeerServer {
  private H2PeerServer() {}

  public static void main(String[] args) throws InterruptedException {
    H2Backend backend = new H2Backend(args[0]);
    backend.version(AdvertisedVersion.MONGO_4_4);
    MongoServer server = new MongoServer(backend);
    server.bind("127.0.0.1", Integer.parseInt(args[1]));
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.shutdownNow();
      stopped.countDown();
    }));
    System.out.println("h2-peer listening on " + server.getConnectionString());
    System.out.flush();
    stopped.await();
  }
}
