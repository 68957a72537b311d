package dev.troupe.server.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * The URL a cluster member reports for its REST API ({@code GET /v1/cluster}, {@code
 * node.httpUrl}): where an owner-aware client sends the requests of the partitions it hosts, so it
 * must be an address others reach, never a wildcard bind address.
 */
class AdvertisedHttpUrlTest {
  @Test
  void theBoundAddressWhenItIsOne() {
    assertEquals("http://10.0.0.7:8081",
        ServeCommand.advertisedHttpUrl("http", "10.0.0.7", 8081, "10.0.0.9"));
    assertEquals("https://127.0.0.1:8443",
        ServeCommand.advertisedHttpUrl("https", "127.0.0.1", 8443, "127.0.0.1"));
  }

  @Test
  void theClusterHostWhenListeningOnEveryInterface() {
    assertEquals("http://10.0.0.9:8081",
        ServeCommand.advertisedHttpUrl("http", "0.0.0.0", 8081, "10.0.0.9"));
    assertEquals("http://10.0.0.9:8081",
        ServeCommand.advertisedHttpUrl("http", "::", 8081, "10.0.0.9"));
  }

  @Test
  void anIpv6LiteralInBrackets() {
    assertEquals("http://[fd00::7]:8081",
        ServeCommand.advertisedHttpUrl("http", "fd00::7", 8081, "fd00::9"));
  }
}
