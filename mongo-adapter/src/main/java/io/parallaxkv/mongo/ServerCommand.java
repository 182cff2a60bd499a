package io.parallaxkv.mongo;

import java.nio.file.Path;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code java -jar parallax-mongo.jar --dbpath DIR [--port 27017] [--bind_ip 127.0.0.1] [--auth]
 * [--create-user USER] [--tlsCertificateKeyFile PEM [--tlsCAFile PEM
 * [--tlsAllowConnectionsWithoutCertificates]]]}.
 */
@Command(name = "parallax-mongo", mixinStandardHelpOptions = true,
    description = "A MongoDB wire-protocol server storing its data in a Parallax volume.")
public final class ServerCommand implements Callable<Integer> {
  @Option(names = "--dbpath", required = true, description = "Directory of the data (created if missing).")
  Path dbPath;

  @Option(names = "--port", defaultValue = "27017", description = "Port (default ${DEFAULT-VALUE}; 0 picks a free one).")
  int port;

  @Option(names = "--bind_ip", defaultValue = "127.0.0.1",
      description = "Address to listen on (default ${DEFAULT-VALUE}).")
  String bindIp;

  @Option(names = "--auth",
      description = "Require authentication (SCRAM-SHA-256) of every connection.")
  boolean auth;

  @Option(names = "--create-user", paramLabel = "USER",
      description = "Create the admin user USER if it does not exist, with the password in the "
          + "environment variable " + PASSWORD_VARIABLE + " (never on the command line).")
  String createUser;

  @Option(names = "--insecure-no-auth",
      description = "Allow a non-loopback --bind_ip without --auth.")
  boolean insecureNoAuth;

  @Option(names = "--tlsCertificateKeyFile", paramLabel = "PEM",
      description = "Speak TLS only, with the certificate and PKCS#8 private key in this PEM file.")
  Path tlsCertificateKeyFile;

  @Option(names = "--tlsCAFile", paramLabel = "PEM",
      description = "With --tlsCertificateKeyFile: clients must present a certificate signed by "
          + "one of the authorities in this PEM file.")
  Path tlsCaFile;

  @Option(names = "--tlsAllowConnectionsWithoutCertificates",
      description = "With --tlsCAFile: let in clients that present no certificate (one that "
          + "presents a certificate must still present a valid one).")
  boolean tlsAllowConnectionsWithoutCertificates;

  static final String PASSWORD_VARIABLE = "PARALLAX_MONGO_PASSWORD";

  public static void main(String[] args) {
    System.exit(new CommandLine(new ServerCommand()).execute(args));
  }

  @Override
  public Integer call() throws InterruptedException {
    String password = System.getenv(PASSWORD_VARIABLE);
    if (createUser != null && password == null) {
      System.err.println("parallax-mongo: --create-user needs the password in " + PASSWORD_VARIABLE);
      return 2;
    }
    if (tlsCertificateKeyFile == null
        && (tlsCaFile != null || tlsAllowConnectionsWithoutCertificates)) {
      System.err.println("parallax-mongo: --tlsCAFile and --tlsAllowConnectionsWithoutCertificates "
          + "need --tlsCertificateKeyFile");
      return 2;
    }
    ParallaxMongoServer server;
    try {
      ParallaxMongoServer.Tls tls = tlsCertificateKeyFile == null ? null
          : new ParallaxMongoServer.Tls(tlsCertificateKeyFile, tlsCaFile,
              tlsAllowConnectionsWithoutCertificates);
      server = ParallaxMongoServer.start(dbPath, bindIp, port, auth, insecureNoAuth, tls);
    } catch (IllegalArgumentException e) {
      System.err.println("parallax-mongo: " + e.getMessage());
      return 2;
    }
    if (createUser != null) {
      try {
        if (server.createUser("admin", createUser, password)) {
          System.out.println("parallax-mongo: created user " + createUser + "@admin");
        }
      } catch (IllegalArgumentException e) {
        server.close();
        System.err.println("parallax-mongo: " + e.getMessage());
        return 2;
      }
    }
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      stopped.countDown();
    }, "parallax-mongo-shutdown"));
    // Tests and scripts wait for this line to know the port (useful with --port 0).
    System.out.println("parallax-mongo listening on " + server.connectionString()
        + (tlsCertificateKeyFile != null ? " (TLS only: connect with tls=true)" : ""));
    System.out.flush();
    stopped.await();
    return 0;
  }
}
