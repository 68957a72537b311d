package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * HTTPS with a certificate the test generates (keytool, valid two days: nothing committed that
 * expires): served from PEM files ({@code --tls-certificate}, {@code --tls-key}) and from a PKCS#12
 * keystore (settings); a client that trusts the certificate is served, a plain-HTTP client and a
 * client that does not trust it are not.
 */
class TlsTest {
  private static final String PASSWORD = "test-keystore-password";

  @TempDir static Path directory;
  static Path keystore;
  static Path certificatePem;
  static Path keyPem;
  static SSLContext trusting;

  @BeforeAll
  static void generateCertificate() throws Exception {
    keystore = directory.resolve("server.p12");
    Process keytool = new ProcessBuilder(
        Path.of(System.getProperty("java.home"), "bin", "keytool").toString(),
        "-genkeypair", "-alias", "troupe", "-keyalg", "EC", "-groupname", "secp256r1",
        "-dname", "CN=localhost", "-ext", "SAN=ip:127.0.0.1,dns:localhost", "-validity", "2",
        "-storetype", "PKCS12", "-keystore", keystore.toString(),
        "-storepass", PASSWORD, "-keypass", PASSWORD).redirectErrorStream(true).start();
    String output = new String(keytool.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(keytool.waitFor(60, TimeUnit.SECONDS));
    assertEquals(0, keytool.exitValue(), output);

    KeyStore keys = KeyStore.getInstance("PKCS12");
    try (InputStream in = Files.newInputStream(keystore)) {
      keys.load(in, PASSWORD.toCharArray());
    }
    Certificate certificate = keys.getCertificate("troupe");
    certificatePem = directory.resolve("server.crt");
    Files.writeString(certificatePem, pem("CERTIFICATE", certificate.getEncoded()));
    keyPem = directory.resolve("server.key");
    Files.writeString(keyPem,
        pem("PRIVATE KEY", keys.getKey("troupe", PASSWORD.toCharArray()).getEncoded()));

    KeyStore trusted = KeyStore.getInstance("PKCS12");
    trusted.load(null, null);
    trusted.setCertificateEntry("troupe", certificate);
    TrustManagerFactory trust =
        TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
    trust.init(trusted);
    trusting = SSLContext.getInstance("TLS");
    trusting.init(null, trust.getTrustManagers(), null);
  }

  private static String pem(String label, byte[] der) {
    return "-----BEGIN " + label + "-----\n"
        + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(der)
        + "\n-----END " + label + "-----\n";
  }

  @Test
  void servesHttpsFromPemFiles() throws Exception {
    List<String> arguments = new ArrayList<>(List.of("serve", "--data",
        Files.createDirectories(directory.resolve("pem-node")).toString(), "--port", "0",
        "--tls-certificate", certificatePem.toString(), "--tls-key", keyPem.toString()));
    try (ServerProcess server = ServerProcess.launch(arguments)) {
      assertServedOnlyOverTrustedTls(server);
    }
  }

  @Test
  void servesHttpsFromAPkcs12Keystore() throws Exception {
    try (ServerProcess server = ServerProcess.start(directory.resolve("keystore-node"),
        "troupe.http.tls.keystore-path=\"" + keystore + "\"",
        "troupe.http.tls.keystore-password=\"" + PASSWORD + "\"")) {
      assertServedOnlyOverTrustedTls(server);
    }
  }

  @Test
  void aKeyWithoutItsCertificateIsRefusedAtStart() throws Exception {
    ServerProcess.Finished refused = ServerProcess.run(List.of("serve", "--data",
        directory.resolve("half-node").toString(), "--port", "0", "--tls-key", keyPem.toString()));
    assertEquals(78, refused.exitStatus(), refused.output());
    assertTrue(refused.output().contains("TLS needs both a certificate"), refused.output());
  }

  private static void assertServedOnlyOverTrustedTls(ServerProcess server) throws Exception {
    String https = "https://127.0.0.1:" + server.port();
    HttpClient client = HttpClient.newBuilder().sslContext(trusting)
        .connectTimeout(Duration.ofSeconds(5)).build();
    HttpResponse<String> written = client.send(HttpRequest.newBuilder(
            URI.create(https + "/v1/entities/User/tls/keys/a"))
        .header("Content-Type", "application/json")
        .PUT(HttpRequest.BodyPublishers.ofString("42")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals(200, written.statusCode(), written.body());
    HttpResponse<String> read = client.send(HttpRequest.newBuilder(
        URI.create(https + "/v1/entities/User/tls/keys/a")).build(),
        HttpResponse.BodyHandlers.ofString());
    assertEquals("{\"value\":42}", read.body());

    HttpClient plain = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    assertThrows(IOException.class, () -> plain.send(HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + server.port() + "/v1/health/live"))
        .timeout(Duration.ofSeconds(10)).build(), HttpResponse.BodyHandlers.ofString()));
    assertThrows(IOException.class, () -> plain.send(HttpRequest.newBuilder(
            URI.create(https + "/v1/health/live")).timeout(Duration.ofSeconds(10)).build(),
        HttpResponse.BodyHandlers.ofString()), "a client that does not trust the certificate");
    assertTrue(server.isAlive());
  }
}
