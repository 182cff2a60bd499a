package io.parallaxkv.mongo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.net.Socket;
import java.security.KeyStore;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManager;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.TrustManagerFactory;
import javax.net.ssl.X509ExtendedKeyManager;

/**
 * Keys and certificates for the TLS tests, made in a test directory with the JDK's keytool: no
 * private key is checked in. Each identity is a key and its certificate chain.
 */
final class TestCertificates {
  private static final String PASSWORD = "changeit";

  private final Path dir;

  TestCertificates(Path dir) {
    this.dir = dir;
  }

  /** A new RSA key whose certificate for {@code dname} is self-signed ({@code ext}: keytool's). */
  KeyStore.PrivateKeyEntry selfSigned(String alias, String dname, String... ext) throws Exception {
    List<String> args = new ArrayList<>(List.of("-genkeypair", "-alias", alias, "-keyalg", "RSA",
        "-keysize", "2048", "-validity", "2", "-dname", dname));
    for (String e : ext) args.addAll(List.of("-ext", e));
    keytool(store(alias), args);
    return entry(alias);
  }

  /** A new RSA key for {@code dname} whose certificate {@code ca} (an identity of here) signs. */
  KeyStore.PrivateKeyEntry signedBy(String caAlias, KeyStore.PrivateKeyEntry ca, String alias,
      String dname) throws Exception {
    KeyStore.PrivateKeyEntry unsigned = selfSigned(alias, dname);
    Path request = dir.resolve(alias + ".csr");
    Path signed = dir.resolve(alias + ".cer");
    keytool(store(alias), List.of("-certreq", "-alias", alias, "-file", request.toString()));
    keytool(store(caAlias), List.of("-gencert", "-alias", caAlias, "-infile", request.toString(),
        "-outfile", signed.toString(), "-validity", "2", "-ext", "ku:c=digitalSignature,keyEncipherment",
        "-ext", "eku=clientAuth,serverAuth"));
    Certificate certificate;
    try (InputStream in = Files.newInputStream(signed)) {
      certificate = CertificateFactory.getInstance("X.509").generateCertificate(in);
    }
    return new KeyStore.PrivateKeyEntry(unsigned.getPrivateKey(),
        new Certificate[] {certificate, ca.getCertificate()});
  }

  /**
   * A client's TLS context: presenting {@code identity} (none if null) to any server that asks
   * for a certificate, whichever authorities it names, trusting {@code trusted}.
   */
  static SSLContext context(KeyStore.PrivateKeyEntry identity, Certificate... trusted)
      throws Exception {
    KeyStore trust = KeyStore.getInstance("PKCS12");
    trust.load(null, null);
    for (int i = 0; i < trusted.length; i++) trust.setCertificateEntry("trusted" + i, trusted[i]);
    TrustManagerFactory trustManagers = TrustManagerFactory.getInstance(
        TrustManagerFactory.getDefaultAlgorithm());
    trustManagers.init(trust);
    KeyManagerFactory keyManagers = null;
    if (identity != null) {
      KeyStore keys = KeyStore.getInstance("PKCS12");
      keys.load(null, null);
      keys.setKeyEntry("identity", identity.getPrivateKey(), PASSWORD.toCharArray(),
          identity.getCertificateChain());
      keyManagers = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keyManagers.init(keys, PASSWORD.toCharArray());
    }
    SSLContext context = SSLContext.getInstance("TLS");
    context.init(keyManagers == null ? null
            : new KeyManager[] {new AlwaysPresent((X509ExtendedKeyManager) keyManagers.getKeyManagers()[0])},
        trustManagers.getTrustManagers(), null);
    return context;
  }

  /**
   * Offers the one identity even to a server that names other authorities (the JDK's own key
   * manager would then offer none), so that a server is shown a certificate it must refuse.
   */
  private static final class AlwaysPresent extends X509ExtendedKeyManager {
    private final X509ExtendedKeyManager keys;

    AlwaysPresent(X509ExtendedKeyManager keys) {
      this.keys = keys;
    }

    @Override
    public String chooseClientAlias(String[] keyType, Principal[] issuers, Socket socket) {
      return "identity";
    }

    @Override
    public String chooseEngineClientAlias(String[] keyType, Principal[] issuers, SSLEngine engine) {
      return "identity";
    }

    @Override
    public String[] getClientAliases(String keyType, Principal[] issuers) {
      return new String[] {"identity"};
    }

    @Override
    public String[] getServerAliases(String keyType, Principal[] issuers) {
      return null;
    }

    @Override
    public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
      return null;
    }

    @Override
    public X509Certificate[] getCertificateChain(String alias) {
      return keys.getCertificateChain(alias);
    }

    @Override
    public PrivateKey getPrivateKey(String alias) {
      return keys.getPrivateKey(alias);
    }
  }

  /** {@code identity} as mongod's --tlsCertificateKeyFile holds it: chain, then PKCS#8 key. */
  static String pem(KeyStore.PrivateKeyEntry identity) throws Exception {
    StringBuilder out = new StringBuilder();
    for (Certificate c : identity.getCertificateChain()) out.append(pem("CERTIFICATE", c.getEncoded()));
    return out.append(pem("PRIVATE KEY", identity.getPrivateKey().getEncoded())).toString();
  }

  static String pem(String type, byte[] der) {
    return "-----BEGIN " + type + "-----\n"
        + Base64.getMimeEncoder(64, new byte[] {'\n'}).encodeToString(der)
        + "\n-----END " + type + "-----\n";
  }

  private Path store(String alias) {
    return dir.resolve(alias + ".p12");
  }

  private KeyStore.PrivateKeyEntry entry(String alias) throws Exception {
    KeyStore store = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(store(alias))) {
      store.load(in, PASSWORD.toCharArray());
    }
    return new KeyStore.PrivateKeyEntry((PrivateKey) store.getKey(alias, PASSWORD.toCharArray()),
        store.getCertificateChain(alias));
  }

  private static void keytool(Path store, List<String> args) throws Exception {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "keytool").toString()));
    command.addAll(args);
    command.addAll(List.of("-storetype", "PKCS12", "-keystore", store.toString(),
        "-storepass", PASSWORD, "-keypass", PASSWORD));
    Process keytool = new ProcessBuilder(command).redirectErrorStream(true).start();
    String output = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(keytool.waitFor(60, TimeUnit.SECONDS), "keytool did not finish");
    assertEquals(0, keytool.exitValue(), String.join(" ", args) + ": " + output);
  }
}
