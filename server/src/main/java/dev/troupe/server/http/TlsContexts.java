package dev.troupe.server.http;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.SecureRandom;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.Base64;
import java.util.Collection;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/**
 * The server's TLS context from {@link HttpSettings.TlsSettings}: a PEM certificate chain (the
 * server's certificate first) with its PKCS#8 PEM private key (RSA, EC or Ed25519), or a PKCS#12
 * keystore with one key entry. With the JDK's own classes only: no file is converted on disk.
 */
final class TlsContexts {
  private static final char[] IN_MEMORY_PASSWORD = new char[0];

  private TlsContexts() {}

  /**
   * The SSL context for {@code tls} (enabled).
   *
   * @throws IllegalArgumentException naming the file when a file is missing or not what it should be
   */
  static SSLContext serverContext(HttpSettings.TlsSettings tls) {
    try {
      KeyStore keys;
      char[] password;
      if (!tls.keystorePath().isEmpty()) {
        password = tls.keystorePassword().toCharArray();
        keys = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(Path.of(tls.keystorePath()))) {
          keys.load(in, password);
        }
      } else {
        password = IN_MEMORY_PASSWORD;
        keys = KeyStore.getInstance("PKCS12");
        keys.load(null, null);
        Certificate[] chain = certificates(Path.of(tls.certificatePath()));
        keys.setKeyEntry("troupe", privateKey(Path.of(tls.keyPath())), password, chain);
      }
      KeyManagerFactory keyManagers =
          KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
      keyManagers.init(keys, password);
      SSLContext context = SSLContext.getInstance("TLS");
      context.init(keyManagers.getKeyManagers(), null, new SecureRandom());
      return context;
    } catch (IOException | GeneralSecurityException e) {
      throw new IllegalArgumentException("cannot set up TLS: " + e.getMessage(), e);
    }
  }

  private static Certificate[] certificates(Path file) throws IOException, GeneralSecurityException {
    try (InputStream in = Files.newInputStream(file)) {
      Collection<? extends Certificate> chain =
          CertificateFactory.getInstance("X.509").generateCertificates(in);
      if (chain.isEmpty()) {
        throw new IllegalArgumentException(file + " holds no PEM certificate");
      }
      return chain.toArray(new Certificate[0]);
    }
  }

  /** A {@code -----BEGIN PRIVATE KEY-----} (PKCS#8) file; the key's algorithm is tried in turn. */
  private static PrivateKey privateKey(Path file) throws IOException {
    String text = Files.readString(file, StandardCharsets.US_ASCII);
    int begin = text.indexOf("-----BEGIN PRIVATE KEY-----");
    int end = text.indexOf("-----END PRIVATE KEY-----");
    if (begin < 0 || end < begin) {
      throw new IllegalArgumentException(file + " is not a PKCS#8 PEM private key (-----BEGIN"
          + " PRIVATE KEY-----); convert one with `openssl pkcs8 -topk8 -nocrypt`");
    }
    byte[] der = Base64.getMimeDecoder()
        .decode(text.substring(begin + "-----BEGIN PRIVATE KEY-----".length(), end));
    PKCS8EncodedKeySpec spec = new PKCS8EncodedKeySpec(der);
    for (String algorithm : new String[] {"RSA", "EC", "Ed25519", "RSASSA-PSS"}) {
      try {
        return KeyFactory.getInstance(algorithm).generatePrivate(spec);
      } catch (GeneralSecurityException notThisAlgorithm) {
        // Try the next one.
      }
    }
    throw new IllegalArgumentException(file + " holds a private key of an unsupported algorithm");
  }
}
