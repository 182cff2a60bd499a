package io.parallaxkv.mongo;

import de.bwaldvogel.mongo.bson.BinData;
import de.bwaldvogel.mongo.bson.Document;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.text.Normalizer;
import javax.crypto.Mac;
import javax.crypto.SecretKeyFactory;
import javax.crypto.spec.PBEKeySpec;
import javax.crypto.spec.SecretKeySpec;

/**
 * A user's SCRAM-SHA-256 credential (RFC 5802, RFC 7677) as stored: the salt, the iteration
 * count, {@code StoredKey = H(HMAC(SaltedPassword, "Client Key"))} and
 * {@code ServerKey = HMAC(SaltedPassword, "Server Key")}. The password itself is never kept; the
 * stored keys let the server check a client's proof and prove itself, but not log in as the user.
 */
record ScramCredential(byte[] salt, int iterations, byte[] storedKey, byte[] serverKey) {
  /** MongoDB's default for SCRAM-SHA-256 (scramSHA256IterationCount); drivers require 4096 or more. */
  static final int ITERATIONS = 15_000;
  private static final int SALT_BYTES = 28;
  private static final SecureRandom RANDOM = new SecureRandom();
  /** Key of the decoy credentials, new in every process. */
  private static final byte[] DECOY_KEY = randomBytes(32);

  ScramCredential {
    assert iterations >= 4096 && storedKey.length == 32 && serverKey.length == 32;
  }

  private static byte[] randomBytes(int n) {
    byte[] b = new byte[n];
    RANDOM.nextBytes(b);
    return b;
  }

  /** A new credential for {@code password}, with a fresh random salt. */
  static ScramCredential derive(String password) {
    byte[] salt = randomBytes(SALT_BYTES);
    byte[] salted = saltedPassword(password, salt, ITERATIONS);
    return new ScramCredential(salt, ITERATIONS, sha256(hmac(salted, "Client Key")),
        hmac(salted, "Server Key"));
  }

  /**
   * A credential no password matches, for a user that does not exist, so that an exchange for
   * an unknown user runs (and fails) exactly as one with a wrong password: its salt is the same
   * on every attempt for that name, as a real user's is (RFC 5802 §9's mock salt).
   */
  static ScramCredential decoy(String name) {
    byte[] salt = java.util.Arrays.copyOf(hmac(DECOY_KEY, "salt:" + name), SALT_BYTES);
    return new ScramCredential(salt, ITERATIONS, hmac(DECOY_KEY, "stored:" + name),
        hmac(DECOY_KEY, "server:" + name));
  }

  /**
   * The password as SCRAM-SHA-256 hashes it: SASLprep (RFC 4013), which for the passwords this
   * server accepts is NFKC normalization with non-ASCII spaces mapped to a space. Passwords with
   * control characters, which SASLprep prohibits, are refused.
   */
  static String saslPrep(String password) {
    StringBuilder mapped = new StringBuilder(password.length());
    for (int i = 0; i < password.length(); i++) {
      char c = password.charAt(i);
      if (c == '\u00AD' || (c >= '\u200B' && c <= '\u200D') || c == '\u2060' || c == '\uFEFF') {
        continue; // "commonly mapped to nothing" (RFC 3454 B.1)
      }
      mapped.append(Character.isSpaceChar(c) ? ' ' : c);
    }
    String prepped = Normalizer.normalize(mapped, Normalizer.Form.NFKC);
    for (int i = 0; i < prepped.length(); i++) {
      if (Character.isISOControl(prepped.charAt(i))) {
        throw new IllegalArgumentException("a password may not contain control characters");
      }
    }
    if (prepped.isEmpty()) throw new IllegalArgumentException("a password may not be empty");
    return prepped;
  }

  static byte[] saltedPassword(String password, byte[] salt, int iterations) {
    char[] chars = saslPrep(password).toCharArray();
    try {
      SecretKeyFactory pbkdf2 = SecretKeyFactory.getInstance("PBKDF2WithHmacSHA256");
      return pbkdf2.generateSecret(new PBEKeySpec(chars, salt, iterations, 256)).getEncoded();
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no PBKDF2WithHmacSHA256", e);
    } finally {
      java.util.Arrays.fill(chars, '\0');
    }
  }

  static byte[] hmac(byte[] key, String message) {
    return hmac(key, message.getBytes(StandardCharsets.UTF_8));
  }

  static byte[] hmac(byte[] key, byte[] message) {
    try {
      Mac mac = Mac.getInstance("HmacSHA256");
      mac.init(new SecretKeySpec(key, "HmacSHA256"));
      return mac.doFinal(message);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no HmacSHA256", e);
    }
  }

  static byte[] sha256(byte[] data) {
    try {
      return MessageDigest.getInstance("SHA-256").digest(data);
    } catch (GeneralSecurityException e) {
      throw new IllegalStateException("the JDK has no SHA-256", e);
    }
  }

  /** The credential as MongoDB stores it under {@code credentials."SCRAM-SHA-256"}. */
  Document toDocument() {
    return new Document("iterationCount", iterations)
        .append("salt", new BinData(salt))
        .append("storedKey", new BinData(storedKey))
        .append("serverKey", new BinData(serverKey));
  }

  static ScramCredential fromDocument(Document d) {
    return new ScramCredential(((BinData) d.get("salt")).getData(),
        ((Number) d.get("iterationCount")).intValue(), ((BinData) d.get("storedKey")).getData(),
        ((BinData) d.get("serverKey")).getData());
  }
}
