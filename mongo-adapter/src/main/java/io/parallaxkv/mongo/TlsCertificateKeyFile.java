package io.parallaxkv.mongo;

import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLException;

/**
 * The server's TLS identity from a PEM file holding its certificate chain and its private key,
 * as {@code mongod --tlsCertificateKeyFile} takes it. The key must be unencrypted PKCS#8
 * ({@code BEGIN PRIVATE KEY}); {@code openssl pkcs8 -topk8 -nocrypt} converts others. With
 * {@code --tlsCAFile}, the authorities whose certificates clients must present.
 */
final class TlsCertificateKeyFile {
  private static final Pattern BLOCK = Pattern.compile(
      "-----BEGIN ([A-Z0-9 ]+)-----[^-]*-----END \\1-----", Pattern.DOTALL);

  private TlsCertificateKeyFile() {}

  /**
   * The server's TLS context (JDK provider, the JDK's default protocols and ciphers). With a
   * {@code caFile} (PEM certificates, {@code --tlsCAFile}) clients must present a certificate
   * one of them signed — or, if {@code allowWithoutCertificates}, either none or such a one.
   *
   * @throws IllegalArgumentException if a file cannot be read, the key file lacks a certificate
   *     or a PKCS#8 key, they do not make a TLS identity, or the CA file holds no certificate
   */
  static SslContext serverContext(Path file, Path caFile, boolean allowWithoutCertificates) {
    String pem = read(file, "--tlsCertificateKeyFile");
    StringBuilder certificates = new StringBuilder();
    String key = null;
    Matcher m = BLOCK.matcher(pem);
    while (m.find()) {
      switch (m.group(1)) {
        case "CERTIFICATE" -> certificates.append(m.group()).append('\n');
        case "PRIVATE KEY" -> key = m.group();
        case "RSA PRIVATE KEY", "EC PRIVATE KEY", "ENCRYPTED PRIVATE KEY" ->
            throw new IllegalArgumentException(file + ": the private key is " + m.group(1)
                + "; this server reads an unencrypted PKCS#8 key (BEGIN PRIVATE KEY): convert it "
                + "with openssl pkcs8 -topk8 -nocrypt");
        default -> { }
      }
    }
    if (certificates.isEmpty() || key == null) {
      throw new IllegalArgumentException(file + " must hold the server's certificate and its "
          + "private key in PEM (BEGIN CERTIFICATE, BEGIN PRIVATE KEY)");
    }
    SslContextBuilder builder = SslContextBuilder.forServer(
        new ByteArrayInputStream(certificates.toString().getBytes(StandardCharsets.US_ASCII)),
        new ByteArrayInputStream(key.getBytes(StandardCharsets.US_ASCII)));
    if (caFile != null) {
      String authorities = read(caFile, "--tlsCAFile");
      if (!authorities.contains("-----BEGIN CERTIFICATE-----")) {
        throw new IllegalArgumentException("--tlsCAFile " + caFile
            + " holds no PEM certificate (BEGIN CERTIFICATE)");
      }
      try {
        builder.trustManager(
            new ByteArrayInputStream(authorities.getBytes(StandardCharsets.US_ASCII)));
      } catch (IllegalArgumentException e) {
        throw new IllegalArgumentException(caFile + ": not usable as --tlsCAFile: " + e, e);
      }
      builder.clientAuth(allowWithoutCertificates ? ClientAuth.OPTIONAL : ClientAuth.REQUIRE);
    }
    try {
      return builder.build();
    } catch (SSLException | IllegalArgumentException e) {
      throw new IllegalArgumentException(file + ": not a usable TLS certificate and key"
          + (caFile == null ? "" : ", or " + caFile + " not usable as CA certificates") + ": " + e, e);
    }
  }

  private static String read(Path file, String option) {
    try {
      return Files.readString(file, StandardCharsets.US_ASCII);
    } catch (IOException e) {
      throw new IllegalArgumentException("cannot read " + option + " " + file + ": " + e, e);
    }
  }
}
