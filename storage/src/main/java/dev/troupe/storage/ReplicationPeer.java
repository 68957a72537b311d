package dev.troupe.storage;

import java.util.Objects;

/**
 * A peer data centre added at runtime, as {@link ReplicationLog#recordPeers} keeps it: its name
 * and its REST server's base URL, as text. The server checks both before recording them (names
 * as {@code --peer}'s, URLs {@code http(s)://host:port}); storage only keeps them.
 */
public record ReplicationPeer(String name, String url) {
  public ReplicationPeer {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(url, "url");
  }
}
