package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.mongodb.MongoClientSettings;
import com.mongodb.MongoTimeoutException;
import com.mongodb.ServerAddress;
import com.mongodb.client.MongoClient;
import com.mongodb.client.MongoClients;
import com.mongodb.client.MongoCollection;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.SocketException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import org.bson.Document;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * TLS with the Java driver, against a self-signed certificate made here with the JDK's keytool:
 * a client that trusts it works; a plaintext client and a client that does not trust the
 * certificate get nowhere, and the server goes on serving; a file without a key is refused with
 * a clear error.
 */
class TlsTest {
  @TempDir Path dir;

  @Test
  void javaDriverOverTls() throws Exception {
    KeyStore.PrivateKeyEntry identity = new TestCertificates(dir).selfSigned("server",
        "CN=localhost", "SAN=ip:127.0.0.1,dns:localhost");
    Certificate certificate = identity.getCertificate();
    Path pem = dir.resolve("server.pem");
    Files.writeString(pem, TestCertificates.pem(identity), StandardCharsets.US_ASCII);
    SSLContext trusting = TestCertificates.context(null, certificate);

    try (ParallaxMongoServer server = ParallaxMongoServer.start(dir.resolve("data"), "127.0.0.1",
        0, false, false, pem)) {
      int port = server.port();
      try (MongoClient client = client(port, true, trusting)) {
        MongoCollection<Document> c = client.getDatabase("tls").getCollection("c");
        c.insertOne(new Document("_id", 1).append("v", "over TLS"));
        assertEquals("over TLS", c.find().first().getString("v"));
      }

      // Plaintext: the TLS handshake fails and the server closes the connection.
      try (Socket plain = new Socket("127.0.0.1", port)) {
        plain.setSoTimeout(10_000);
        OutputStream out = plain.getOutputStream();
        out.write(new byte[] {21, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, (byte) 0xdd, 7, 0, 0,
            0, 0, 0, 0, 0});
        out.flush();
        try {
          InputStream in = plain.getInputStream();
          while (in.read() >= 0) {
            // A TLS alert may come before the close; no MongoDB reply can.
          }
        } catch (SocketException reset) {
          // closed by the server
        }
      }
      try (MongoClient plain = client(port, false, null)) {
        assertThrows(MongoTimeoutException.class,
            () -> plain.getDatabase("tls").getCollection("c").find().first());
      }
      // A client that does not trust the self-signed certificate.
      try (MongoClient untrusting = client(port, true, SSLContext.getDefault())) {
        assertThrows(MongoTimeoutException.class,
            () -> untrusting.getDatabase("tls").getCollection("c").find().first());
      }
      try (MongoClient client = client(port, true, trusting)) {
        assertEquals(1, client.getDatabase("tls").getCollection("c").countDocuments(),
            "the server serves on after the failed handshakes");
      }
    }

    Path certificateOnly = dir.resolve("cert-only.pem");
    Files.writeString(certificateOnly, TestCertificates.pem("CERTIFICATE", certificate.getEncoded()));
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> ParallaxMongoServer.start(dir.resolve("data2"), "127.0.0.1", 0, false, false,
            certificateOnly));
    assertTrue(refused.getMessage().contains("private key"), refused.getMessage());
  }

  /**
   * {@code --tlsCAFile}: a client presenting a certificate the CA signed gets in; one presenting
   * none, or a certificate of another authority, fails its handshake and the server serves on.
   * With {@code --tlsAllowConnectionsWithoutCertificates} a client without a certificate gets in
   * as well, one with a certificate of another authority still does not.
   */
  @Test
  void clientCertificatesAreCheckedAgainstTheCaFile() throws Exception {
    TestCertificates certificates = new TestCertificates(dir);
    KeyStore.PrivateKeyEntry ca = certificates.selfSigned("ca", "CN=Parallax Test CA", "bc:c");
    KeyStore.PrivateKeyEntry server = certificates.selfSigned("server", "CN=localhost",
        "SAN=ip:127.0.0.1,dns:localhost");
    KeyStore.PrivateKeyEntry signed = certificates.signedBy("ca", ca, "client", "CN=client");
    KeyStore.PrivateKeyEntry foreign = certificates.selfSigned("foreign", "CN=client");
    Path serverPem = dir.resolve("server.pem");
    Files.writeString(serverPem, TestCertificates.pem(server), StandardCharsets.US_ASCII);
    Path caPem = dir.resolve("ca.pem");
    Files.writeString(caPem, TestCertificates.pem("CERTIFICATE", ca.getCertificate().getEncoded()),
        StandardCharsets.US_ASCII);
    Certificate serverCertificate = server.getCertificate();
    SSLContext withSigned = TestCertificates.context(signed, serverCertificate);
    SSLContext withForeign = TestCertificates.context(foreign, serverCertificate);
    SSLContext withNone = TestCertificates.context(null, serverCertificate);

    for (boolean allowWithout : new boolean[] {false, true}) {
      try (ParallaxMongoServer mongo = ParallaxMongoServer.start(dir.resolve("data-" + allowWithout),
          "127.0.0.1", 0, false, false, new ParallaxMongoServer.Tls(serverPem, caPem, allowWithout))) {
        int port = mongo.port();
        try (MongoClient client = client(port, true, withSigned)) {
          MongoCollection<Document> c = client.getDatabase("tls").getCollection("c");
          c.insertOne(new Document("_id", 1).append("v", "signed"));
          assertEquals("signed", c.find().first().getString("v"));
        }
        try (MongoClient client = client(port, true, withForeign)) {
          assertThrows(MongoTimeoutException.class,
              () -> client.getDatabase("tls").getCollection("c").find().first());
        }
        try (MongoClient client = client(port, true, withNone)) {
          if (allowWithout) {
            assertEquals(1, client.getDatabase("tls").getCollection("c").countDocuments());
          } else {
            assertThrows(MongoTimeoutException.class,
                () -> client.getDatabase("tls").getCollection("c").find().first());
          }
        }
        try (MongoClient client = client(port, true, withSigned)) {
          assertEquals(1, client.getDatabase("tls").getCollection("c").countDocuments(),
              "the server serves on after the refused handshakes");
        }
      }
    }
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> ParallaxMongoServer.start(dir.resolve("data-bad-ca"), "127.0.0.1", 0, false, false,
            new ParallaxMongoServer.Tls(serverPem, serverPem.resolveSibling("missing.pem"), false)));
    assertTrue(refused.getMessage().contains("--tlsCAFile"), refused.getMessage());
  }

  private static MongoClient client(int port, boolean tls, SSLContext context) {
    return MongoClients.create(MongoClientSettings.builder()
        .applyToClusterSettings(b -> b.hosts(List.of(new ServerAddress("127.0.0.1", port)))
            .serverSelectionTimeout(3, TimeUnit.SECONDS))
        .applyToSslSettings(b -> {
          b.enabled(tls);
          if (context != null) b.context(context);
        })
        .build());
  }
}
