package dev.troupe.bench;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * What a benchmark needs to measure Troupe as a client meets it when exposed: one bearer token with
 * every scope, minted for the run, and the setting that makes the server require it (the token's
 * SHA-256, as the server stores tokens; see docs/OPERATIONS.md, "Tokens").
 */
record SecuredAccess(String token) {
  static final String TOKEN_NAME = "bench";

  /** A fresh random token (256 bits, URL-safe hex). */
  static SecuredAccess mint() {
    byte[] secret = new byte[32];
    new SecureRandom().nextBytes(secret);
    return new SecuredAccess(HexFormat.of().formatHex(secret));
  }

  /** The HOCON value of {@code troupe.http.auth.tokens} that admits this token with every scope. */
  String tokensSetting() {
    return "[{name = " + TOKEN_NAME + ", sha256 = \"" + sha256Hex(token)
        + "\", scopes = [read, write, admin]}]";
  }

  /** {@code --set} override for a server process. */
  String settingOverride() {
    return "troupe.http.auth.tokens=" + tokensSetting();
  }

  static String sha256Hex(String text) {
    try {
      return HexFormat.of().formatHex(
          MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8)));
    } catch (NoSuchAlgorithmException e) {
      throw new IllegalStateException("every JDK has SHA-256", e);
    }
  }
}
