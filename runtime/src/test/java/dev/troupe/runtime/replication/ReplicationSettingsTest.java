package dev.troupe.runtime.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.runtime.RuntimeSettings;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class ReplicationSettingsTest {

  private static RuntimeSettings load(Map<String, Object> overrides) {
    return RuntimeSettings.fromConfig(ConfigFactory.parseMap(overrides)
        .withFallback(ConfigFactory.parseMap(Map.of("troupe.data-directory",
            Path.of("unused").toString())))
        .withFallback(ConfigFactory.load()));
  }

  @Test
  void withoutANameNothingReplicatesAndTheConfiguredIdStays() {
    RuntimeSettings settings = load(Map.of());
    assertFalse(settings.replication().enabled());
    assertEquals(DataCentreIds.UNNAMED, settings.replication().dataCentreId());
    assertEquals(1, settings.storage().dataCentreId());
  }

  @Test
  void aNamedDataCentreStampsItsCommitsWithTheIdOfItsName() {
    RuntimeSettings settings = load(Map.of("troupe.dc.name", "paris",
        "troupe.dc.peers", List.of("tokyo", "lima")));
    ReplicationSettings replication = settings.replication();
    assertTrue(replication.enabled());
    assertEquals(DataCentreIds.of("paris"), settings.storage().dataCentreId());
    assertEquals(List.of(DataCentreIds.of("tokyo"), DataCentreIds.of("lima")),
        replication.peerIds());
    assertEquals(List.of(DataCentreIds.of("paris"), DataCentreIds.of("tokyo"),
        DataCentreIds.of("lima")), replication.allDataCentreIds());
    // The defaults of reference.conf.
    assertEquals(64, replication.maxApplyingTransactions());
    assertEquals(1000, replication.pullBatchMaxEntries());
    assertEquals(2000, replication.forwardAfterMillis());
    assertEquals(5000, replication.tokenWaitMaxMillis());
    assertEquals(256, replication.maxTransactionsPerApplication());
    assertEquals(1, replication.maxEntitiesPerApplication(), "runs of one entity: one commit");
  }

  @Test
  void refusesBadNamesRepeatedPeersAndNonPositiveLimits() {
    assertThrows(IllegalArgumentException.class, () -> load(Map.of("troupe.dc.name", "a b")));
    assertThrows(IllegalArgumentException.class, () -> load(Map.of("troupe.dc.name", "paris",
        "troupe.dc.peers", List.of("paris"))));
    assertThrows(IllegalArgumentException.class, () -> load(Map.of("troupe.dc.name", "paris",
        "troupe.dc.peers", List.of("tokyo", "tokyo"))));
    assertThrows(IllegalArgumentException.class, () -> load(Map.of(
        "troupe.dc.peers", List.of("tokyo"))));
    assertThrows(IllegalArgumentException.class, () -> load(Map.of("troupe.dc.name", "paris",
        "troupe.replication.max-applying-transactions", 0)));
    assertThrows(IllegalArgumentException.class, () -> load(Map.of("troupe.dc.name", "paris",
        "troupe.replication.max-transactions-per-application", 0)));
    assertThrows(IllegalArgumentException.class, () -> load(Map.of("troupe.dc.name", "paris",
        "troupe.replication.max-entities-per-application", 0)));
  }
}
