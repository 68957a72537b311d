package dev.troupe.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.storage.ReplicationPeer;
import java.net.URI;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The checks of a peer added at runtime ({@link DataCentreReplication#checked}) and the merge of
 * the configured peers with the recorded ones at start ({@link DataCentreReplication#merged}).
 */
class DataCentrePeersTest {
  private static final ReplicationServerSettings.Peer PARIS =
      new ReplicationServerSettings.Peer("paris", DataCentreIds.of("paris"),
          URI.create("http://10.0.0.2:8080"));

  private static ReplicationServerSettings lisbon(Optional<String> secret,
      ReplicationServerSettings.Peer... peers) {
    return new ReplicationServerSettings("lisbon", List.of(peers), secret, false, 100, 50, 500,
        5000, 1 << 20, 0, 2, true, 100, 10_000, 5000);
  }

  private static final ReplicationServerSettings LISBON =
      lisbon(Optional.of("a-secret-of-sixteen-or-more"), PARIS);

  private static String[] colliding;

  /** Two distinct valid names with one CRC32C id (found by search: 32-bit ids collide). */
  static synchronized String[] collidingNames() {
    if (colliding == null) {
      colliding = searchCollision();
    }
    return colliding;
  }

  private static String[] searchCollision() {
    Map<Integer, String> seen = new HashMap<>();
    for (int i = 0; ; i++) {
      String name = "dc" + i;
      String other = seen.putIfAbsent(DataCentreIds.of(name), name);
      if (other != null) {
        return new String[] {other, name};
      }
    }
  }

  private static ErrorCode refusal(ReplicationServerSettings settings, String name, String url) {
    return assertThrows(TroupeException.class,
        () -> DataCentreReplication.checked(settings, name, url)).code();
  }

  @Test
  void aPeerIsCheckedAsDashDashPeerIs() {
    ReplicationServerSettings.Peer tokyo =
        DataCentreReplication.checked(LISBON, "tokyo", " http://10.0.0.3:8080/ ");
    assertEquals(new ReplicationServerSettings.Peer("tokyo", DataCentreIds.of("tokyo"),
        URI.create("http://10.0.0.3:8080")), tokyo);
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "lisbon", "http://x:1"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "", "http://x:1"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "-x", "http://x:1"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "x".repeat(64), "http://x:1"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "tokyo", "x:1"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "tokyo", "http://u@x:1"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "tokyo", "http://x:1?q"));
    assertEquals(ErrorCode.INVALID_REQUEST, refusal(LISBON, "tokyo", null));
    assertEquals(ErrorCode.CONFLICT, refusal(lisbon(Optional.empty(), PARIS), "tokyo",
        "http://x:1"), "no secret: a puller could not authenticate");
  }

  @Test
  void aNameWithAnotherDataCentresIdIsAConflict() {
    String[] names = collidingNames();
    ReplicationServerSettings.Peer first = DataCentreReplication.checked(LISBON, names[0],
        "http://x:1");
    ReplicationServerSettings with = lisbon(Optional.of("a-secret-of-sixteen-or-more"), PARIS,
        first);
    assertEquals(ErrorCode.CONFLICT, refusal(with, names[1], "http://y:2"));
    ReplicationServerSettings named = new ReplicationServerSettings(names[0], List.of(),
        Optional.of("a-secret-of-sixteen-or-more"), false, 100, 50, 500, 5000, 1 << 20, 0, 2,
        true, 100, 10_000, 5000);
    assertEquals(ErrorCode.CONFLICT, refusal(named, names[1], "http://y:2"),
        "this DC's own id");
  }

  @Test
  void theConfigurationWinsAndARecordedPeerThatNoLongerFitsIsLeftOut() {
    String[] names = collidingNames();
    ReplicationServerSettings configured = lisbon(Optional.of("a-secret-of-sixteen-or-more"),
        PARIS, DataCentreReplication.checked(LISBON, names[0], "http://x:1"));
    ReplicationServerSettings merged = DataCentreReplication.merged(configured, List.of(
        new ReplicationPeer("paris", "http://moved:1"),
        new ReplicationPeer("tokyo", "http://10.0.0.3:8080"),
        new ReplicationPeer(names[1], "http://y:2"),
        new ReplicationPeer("bad name", "http://z:3")));
    assertEquals(List.of("paris", names[0], "tokyo"),
        merged.peers().stream().map(ReplicationServerSettings.Peer::name).toList());
    assertEquals(PARIS, merged.peerNamed("paris").orElseThrow(), "the configured URL");
    assertEquals(URI.create("http://10.0.0.3:8080"), merged.peerNamed("tokyo").orElseThrow().url());
  }
}
