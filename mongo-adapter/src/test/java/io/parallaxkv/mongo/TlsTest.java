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
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
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
  private static final char[] STORE_PASSWORD = "changeit".toCharArray();

  @TempDir Path dir;

  @Test
  void javaDriverOverTls() throws Exception {
    Path keyStore = dir.resolve("server.p12");
    Process keytool = new ProcessBuilder(Path.of(System.getProperty("java.home"), "bin", "keytool")
        .toString(), "-genkeypair", "-alias", "server", "-keyalg", "RSA", "-keysize", "2048",
        "-validity", "2", "-dname", "CN=localhost", "-ext", "SAN=ip:127.0.0.1,dns:localhost",
        "-storetype", "PKCS12", "-keystore", keyStore.toString(),
        "-storepass", new String(STORE_PASSWORD), "-keypass", new String(STORE_PASSWORD))
        .redirectErrorStream(true).start();
    String keytoolOutput = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(keytool.waitFor(60, TimeUnit.SECONDS), "keytool did not finish");
    assertEquals(0, keytool.exitValue(), keytoolOutput);
    KeyStore store = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keyStore)) {
      store.load(in, STORE_PASSWORD);
    }
    Certificate certificate = store.getCertificate("server");
    PrivateKey key = (PrivateKey) store.getKey("server", STORE_PASSWORD);
    Path pem = dir.resolve("server.pem");
    Files.writeString(pem, pem("CERTIFICATE", certificate.getEncoded())
        + pem("PRIVATE KEY", key.getEncoded()), StandardCharsets.US_ASCII);

    KeyStore trusted = KeyStore.getInstance("PKCS12");
    trusted.load(null, null);
    trusted.setCertificateEntry("server", certificate);
    TrustManagerFactory trust = TrustManagerFactory.getInstance(
        TrustManagerFactory.getDefaultAlgorithm());
    trust.init(trusted);
    SSLContext trusting = SSLContext.getInstance("TLS");
    trusting.init(null, trust.getTrustManagers(), null);

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
    Files.writeString(certificateOnly, pem("CERTIFICATE", certificate.getEncoded()));
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> ParallaxMongoServer.start(dir.resolve("data2"), "127.0.0.1", 0, false, false,
            certificateOnly));
    assertTrue(refused.getMessage().contains("private key"), refused.getMessage());
  }

  private static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END " + type + "-----\n";
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
