package dev.troupe.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.causal.DataCentreIds;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Parsing and refusing the DC settings: a node never starts half-configured. */
class ReplicationServerSettingsTest {
  private static final String SECRET = "s3cret-s3cret-s3cret";

  @TempDir Path directory;

  private static ReplicationServerSettings parse(String hocon) {
    Config config = ConfigFactory.parseString(hocon).withFallback(ConfigFactory.load()).resolve();
    return ReplicationServerSettings.fromConfig(config);
  }

  private static String refusal(String hocon) {
    return assertThrows(IllegalArgumentException.class, () -> parse(hocon)).getMessage();
  }

  @Test
  void unnamedByDefault() {
    ReplicationServerSettings settings = parse("");
    assertFalse(settings.named());
    assertEquals(DataCentreIds.UNNAMED, settings.dataCentreId());
    assertEquals(0, settings.peers().size());
    assertTrue(settings.secret().isEmpty());
  }

  @Test
  void threeDataCentres() {
    ReplicationServerSettings settings = parse("""
        troupe.dc.name = lisbon
        troupe.dc.peers = [paris, oslo]
        troupe.dc.peer-urls { paris = "http://127.0.0.1:8081", oslo = "https://oslo.example:443/" }
        troupe.replication.secret = "%s"
        """.formatted(SECRET));
    assertEquals(DataCentreIds.of("lisbon"), settings.dataCentreId());
    assertEquals(2, settings.peers().size());
    assertEquals(URI.create("https://oslo.example:443"), settings.peers().get(1).url());
    assertEquals(Optional.of(DataCentreIds.of("paris")), settings.idOf("paris"));
    assertEquals(Optional.of(DataCentreIds.of("paris")),
        settings.idOf(Integer.toString(DataCentreIds.of("paris"))));
    assertEquals(Optional.of(settings.dataCentreId()), settings.idOf("lisbon"));
    assertEquals(Optional.empty(), settings.idOf("rome"));
    assertEquals("oslo", settings.nameOf(DataCentreIds.of("oslo")));
    assertEquals(Optional.of(SECRET), settings.secret());
  }

  @Test
  void secretFromAFile() throws Exception {
    Path file = directory.resolve("secret");
    Files.writeString(file, SECRET + "\n");
    ReplicationServerSettings settings = parse("""
        troupe.dc.name = a
        troupe.dc.peers = [b]
        troupe.dc.peer-urls.b = "http://127.0.0.1:8081"
        troupe.replication.secret-file = "%s"
        """.formatted(file));
    assertEquals(Optional.of(SECRET), settings.secret());
    assertTrue(refusal("troupe.replication.secret-file = \"" + directory.resolve("none") + "\"")
        .contains("cannot read"));
  }

  /** {@code troupe.dc.peers} and {@code peer-urls} for {@code name=url} pairs. */
  private static String peers(String... pairs) {
    StringBuilder names = new StringBuilder("troupe.dc.peers = [");
    StringBuilder urls = new StringBuilder("troupe.dc.peer-urls {");
    for (String pair : pairs) {
      String[] parts = pair.split("=", 2);
      names.append('"').append(parts[0]).append("\", ");
      if (parts.length == 2) {
        urls.append('"').append(parts[0]).append("\" = \"").append(parts[1]).append("\"\n");
      }
    }
    return names.append("]\n").append(urls).append("}\n").toString();
  }

  @Test
  void refusals() {
    assertTrue(refusal("troupe.dc.name = \"-bad\"").contains("not a valid data centre name"));
    String named = "troupe.dc.name = a\ntroupe.replication.secret = \"" + SECRET + "\"\n";
    assertTrue(refusal("troupe.replication.secret = \"" + SECRET + "\"\n" + peers("b=http://h:1"))
        .contains("needs this DC's own name"));
    assertTrue(refusal(named + peers("a=http://h:1")).contains("own name"));
    assertTrue(refusal(named + peers("b=http://h:1", "b=http://h:2")).contains("listed twice"));
    assertTrue(refusal(named + peers("b c=http://h:1")).contains("not a valid"));
    for (String url : new String[] {"h:1", "ftp://h:1", "http://h", "http://h:1/v1",
        "http://u@h:1", "http://h:1?x=1", "http://h:1#f", "not a url"}) {
      assertTrue(refusal(named + peers("b=" + url)).contains("expected the base URL"), url);
    }
    assertTrue(refusal(named + peers("b")).contains("has no URL"));
    assertTrue(refusal(named + "troupe.dc.peer-urls.b = \"http://h:1\"")
        .contains("not in troupe.dc.peers"));
    assertTrue(refusal(named + "troupe.dc.peers = [eu.b]\ntroupe.dc.peer-urls.eu.b = \"http://h:1\"")
        .contains("quote a name with dots"));
    assertEquals(1, parse(named + peers("eu.b=http://h:1")).peers().size());
    assertTrue(refusal("troupe.dc.name = a\n" + peers("b=http://h:1"))
        .contains("no replication secret"));
    assertTrue(refusal("troupe.replication.secret = short").contains("at least 16"));
    assertTrue(refusal("troupe.replication.secret = \"" + SECRET + "\"\n"
        + "troupe.replication.secret-file = x").contains("not both"));
    assertTrue(refusal("troupe.replication.pull-backoff-max-millis = 1\n"
        + "troupe.replication.pull-backoff-initial-millis = 2").contains("at least"));
    assertTrue(refusal("troupe.replication.pull-interval-millis = 0").contains("positive"));
    // Tests may replicate without a secret, deliberately.
    assertEquals(1, parse("troupe.dc.name = a\ntroupe.replication.allow-unauthenticated = true\n"
        + peers("b=http://h:1")).peers().size());
  }

  @Test
  void collidingIdsAreRefused() {
    // Two distinct names with one CRC32C id: found by search over short names.
    String[] pair = collision();
    String refusal = refusal("troupe.dc.name = zz-own\ntroupe.replication.secret = \"" + SECRET
        + "\"\n" + peers(pair[0] + "=http://h:1", pair[1] + "=http://h:2"));
    assertTrue(refusal.contains("the same id"), refusal);
  }

  /** Two names whose ids collide (31 bits: a birthday search over ~10^5 names finds one). */
  private static String[] collision() {
    java.util.Map<Integer, String> seen = new java.util.HashMap<>();
    for (int i = 0; ; i++) {
      String name = "dc" + i;
      String previous = seen.put(DataCentreIds.of(name), name);
      if (previous != null) {
        return new String[] {previous, name};
      }
    }
  }
}
