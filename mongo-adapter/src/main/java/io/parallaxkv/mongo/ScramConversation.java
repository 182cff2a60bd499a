package io.parallaxkv.mongo;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.function.Function;

/**
 * The server side of one SCRAM-SHA-256 exchange (RFC 5802 §3, RFC 7677), as MongoDB runs it
 * over {@code saslStart} (client-first → server-first) and {@code saslContinue} (client-final →
 * server-final). Channel binding is not supported, as in MongoDB without TLS: the GS2 header must
 * be {@code n,,} or {@code y,,}. Every failure is an {@link AuthenticationFailed} with the same
 * message, whatever went wrong, and an unknown user fails at the same step as a wrong password
 * ({@link ScramCredential#decoy}), so that a client learns nothing about which users exist.
 */
final class ScramConversation {
  private static final SecureRandom RANDOM = new SecureRandom();
  private static final Base64.Encoder B64 = Base64.getEncoder();
  private static final Base64.Decoder B64D = Base64.getDecoder();

  /** Thrown for any failed exchange; MongoDB's error 18 (AuthenticationFailed). */
  static final class AuthenticationFailed extends Exception {
    private static final long serialVersionUID = 1L;

    AuthenticationFailed() {
      super("Authentication failed.");
    }
  }

  private enum State { STARTED, PROVEN, DONE }

  private final String user;
  private final ScramCredential credential;
  private final String clientFirstBare;
  private final String serverFirst;
  private final String nonce;
  private State state = State.STARTED;

  private ScramConversation(String user, ScramCredential credential, String clientFirstBare,
      String serverFirst, String nonce) {
    this.user = user;
    this.credential = credential;
    this.clientFirstBare = clientFirstBare;
    this.serverFirst = serverFirst;
    this.nonce = nonce;
  }

  /**
   * Starts an exchange from the client-first message; {@code credentials} finds a user's
   * credential (null if there is no such user: the exchange then goes on with a decoy).
   * {@link #serverFirst()} is the reply.
   */
  static ScramConversation start(byte[] clientFirst, Function<String, ScramCredential> credentials)
      throws AuthenticationFailed {
    String message = new String(clientFirst, StandardCharsets.UTF_8);
    if (!message.startsWith("n,,") && !message.startsWith("y,,")) throw new AuthenticationFailed();
    String bare = message.substring(3);
    String user = null;
    String clientNonce = null;
    for (String attribute : bare.split(",")) {
      if (attribute.startsWith("n=")) user = unescapeName(attribute.substring(2));
      else if (attribute.startsWith("r=")) clientNonce = attribute.substring(2);
      else if (attribute.startsWith("m=")) throw new AuthenticationFailed(); // no extensions
    }
    if (user == null || clientNonce == null || clientNonce.isEmpty()) {
      throw new AuthenticationFailed();
    }
    ScramCredential credential = credentials.apply(user);
    // An unknown user gets a decoy and fails at the proof, as a wrong password does.
    if (credential == null) credential = ScramCredential.decoy(user);
    byte[] serverNonce = new byte[24];
    RANDOM.nextBytes(serverNonce);
    String nonce = clientNonce + B64.encodeToString(serverNonce);
    String serverFirst = "r=" + nonce + ",s=" + B64.encodeToString(credential.salt())
        + ",i=" + credential.iterations();
    return new ScramConversation(user, credential, bare, serverFirst, nonce);
  }

  /** The user named in the client-first message. */
  String user() {
    return user;
  }

  byte[] serverFirst() {
    return serverFirst.getBytes(StandardCharsets.UTF_8);
  }

  /**
   * Checks the client-final message's proof; returns the server-final message
   * ({@code v=ServerSignature}) that proves the server knows the credential too.
   */
  byte[] verify(byte[] clientFinal) throws AuthenticationFailed {
    if (state != State.STARTED) throw new AuthenticationFailed();
    String message = new String(clientFinal, StandardCharsets.UTF_8);
    int proofAt = message.lastIndexOf(",p=");
    if (proofAt < 0) throw new AuthenticationFailed();
    String withoutProof = message.substring(0, proofAt);
    String channelBinding = null;
    String finalNonce = null;
    for (String attribute : withoutProof.split(",")) {
      if (attribute.startsWith("c=")) channelBinding = attribute.substring(2);
      else if (attribute.startsWith("r=")) finalNonce = attribute.substring(2);
    }
    // "biws" and "eSws" are base64 of the GS2 headers "n,," and "y,,": no channel binding.
    if (!"biws".equals(channelBinding) && !"eSws".equals(channelBinding)) {
      throw new AuthenticationFailed();
    }
    if (!nonce.equals(finalNonce)) throw new AuthenticationFailed();
    byte[] proof;
    try {
      proof = B64D.decode(message.substring(proofAt + 3));
    } catch (IllegalArgumentException e) {
      throw new AuthenticationFailed();
    }
    byte[] authMessage = (clientFirstBare + "," + serverFirst + "," + withoutProof)
        .getBytes(StandardCharsets.UTF_8);
    byte[] clientSignature = ScramCredential.hmac(credential.storedKey(), authMessage);
    if (proof.length != clientSignature.length) throw new AuthenticationFailed();
    byte[] clientKey = new byte[proof.length];
    for (int i = 0; i < proof.length; i++) clientKey[i] = (byte) (proof[i] ^ clientSignature[i]);
    if (!MessageDigest.isEqual(ScramCredential.sha256(clientKey), credential.storedKey())) {
      throw new AuthenticationFailed();
    }
    state = State.PROVEN;
    byte[] serverSignature = ScramCredential.hmac(credential.serverKey(), authMessage);
    return ("v=" + B64.encodeToString(serverSignature)).getBytes(StandardCharsets.UTF_8);
  }

  /** Whether the client's proof was accepted. */
  boolean proven() {
    return state != State.STARTED;
  }

  /** The client's empty last message (when it did not ask to skip it) ends the exchange. */
  void finish() throws AuthenticationFailed {
    if (state != State.PROVEN) throw new AuthenticationFailed();
    state = State.DONE;
  }

  /** {@code saslname} of RFC 5802: "=2C" is ',' and "=3D" is '='; any other '=' is invalid. */
  private static String unescapeName(String name) throws AuthenticationFailed {
    StringBuilder out = new StringBuilder(name.length());
    for (int i = 0; i < name.length(); i++) {
      char c = name.charAt(i);
      if (c != '=') {
        out.append(c);
      } else if (name.startsWith("=2C", i)) {
        out.append(',');
        i += 2;
      } else if (name.startsWith("=3D", i)) {
        out.append('=');
        i += 2;
      } else {
        throw new AuthenticationFailed();
      }
    }
    return out.toString();
  }
}
