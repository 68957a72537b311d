package dev.troupe.runtime.cluster;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import dev.troupe.runtime.RuntimeSettings;
import java.util.List;
import org.junit.jupiter.api.Test;

/** troupe.cluster: parsed once, off by default, turned into Pekko's settings, checked. */
class ClusterSettingsTest {
  private static Config with(String overrides) {
    return ConfigFactory.parseString(overrides).withFallback(ConfigFactory.load());
  }

  @Test
  void offByDefaultSoASingleNodeHasNoRemoting() {
    ClusterSettings settings = RuntimeSettings.fromConfig(ConfigFactory.load()).cluster();
    assertFalse(settings.enabled());
    assertEquals("local", ConfigFactory.load().getString("pekko.actor.provider"));
  }

  @Test
  void pekkosSettingsFollowTroupes() {
    ClusterSettings settings = RuntimeSettings.fromConfig(with("""
        troupe.cluster.enabled = true
        troupe.cluster.host = "127.0.0.1"
        troupe.cluster.port = 7400
        troupe.cluster.seed-nodes = ["127.0.0.1:7400", "10.0.0.2:7355"]
        troupe.cluster.stable-after-millis = 4000
        troupe.cluster.failure-detector-pause-millis = 2500
        troupe.cluster.hand-off-timeout-millis = 6000
        troupe.storage.backend = postgres
        troupe.storage.postgres.jdbc-url = "jdbc:postgresql://127.0.0.1:5432/troupe"
        """)).cluster();
    assertTrue(settings.enabled());
    Config pekko = ClusterNode.actorSystemConfig(settings, 5, ConfigFactory.load());
    assertEquals("cluster", pekko.getString("pekko.actor.provider"));
    assertEquals(7400, pekko.getInt("pekko.remote.artery.canonical.port"));
    assertEquals(List.of("pekko://troupe@127.0.0.1:7400", "pekko://troupe@10.0.0.2:7355"),
        pekko.getStringList("pekko.cluster.seed-nodes"));
    assertEquals(List.of("troupe-node-5"), pekko.getStringList("pekko.cluster.roles"));
    assertEquals("keep-majority",
        pekko.getString("pekko.cluster.split-brain-resolver.active-strategy"));
    assertEquals(4000, pekko.getDuration("pekko.cluster.split-brain-resolver.stable-after")
        .toMillis());
    assertEquals(2500, pekko.getDuration(
        "pekko.cluster.failure-detector.acceptable-heartbeat-pause").toMillis());
    assertEquals(6000, pekko.getDuration("pekko.cluster.sharding.handoff-timeout").toMillis());
    assertEquals("off", pekko.getString("pekko.cluster.sharding.remember-entities"));
    assertEquals("none", pekko.getString("pekko.cluster.sharding.passivation.strategy"));
    assertEquals(WireFrameSerializer.class.getName(),
        pekko.getString("pekko.actor.serializers.troupe-wire"));
  }

  @Test
  void aMemberNeedsTheSharedStoreAndOpensItAcquired() {
    IllegalArgumentException refused = org.junit.jupiter.api.Assertions.assertThrows(
        IllegalArgumentException.class, () -> RuntimeSettings.fromConfig(with("""
            troupe.cluster.enabled = true
            """)));
    assertTrue(refused.getMessage().contains("postgres"), refused.getMessage());
    RuntimeSettings member = RuntimeSettings.fromConfig(with("""
        troupe.cluster.enabled = true
        troupe.storage.backend = postgres
        troupe.storage.postgres.jdbc-url = "jdbc:postgresql://127.0.0.1:5432/troupe"
        """));
    assertEquals(dev.troupe.storage.PartitionOwnership.ACQUIRED,
        member.storage().partitionOwnership());
    assertEquals(dev.troupe.storage.PartitionOwnership.ALL,
        RuntimeSettings.fromConfig(ConfigFactory.load()).storage().partitionOwnership());
  }

  @Test
  void aNodesRoleCarriesItsId() {
    assertEquals("troupe-node-12", ClusterSettings.nodeRole(12));
    assertEquals(12, ClusterSettings.nodeIdOfRole("troupe-node-12"));
    assertEquals(-1, ClusterSettings.nodeIdOfRole("dc-default"));
    assertEquals(-1, ClusterSettings.nodeIdOfRole("troupe-node-x"));
  }

  @Test
  void aSeedNodeIsHostAndPort() {
    for (String bad : List.of("127.0.0.1", "127.0.0.1:", ":7355", "host:port", "host:70000")) {
      IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
          () -> RuntimeSettings.fromConfig(with(
              "troupe.cluster.seed-nodes = [\"" + bad + "\"]")));
      assertTrue(refused.getMessage().contains("HOST:PORT"), refused.getMessage());
    }
  }

  @Test
  void timingsArePositive() {
    assertThrows(IllegalArgumentException.class,
        () -> RuntimeSettings.fromConfig(with("troupe.cluster.stable-after-millis = 0")));
  }

  @Test
  void aClusterThatWouldReplicateToOtherDataCentresIsRefused() {
    IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
        () -> RuntimeSettings.fromConfig(with("""
            troupe.cluster.enabled = true
            troupe.dc.name = lisbon
            troupe.dc.peers = [paris]
            """)));
    assertTrue(refused.getMessage().contains("does not replicate"), refused.getMessage());
  }
}
