package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigFactory;
import org.junit.jupiter.api.Test;

/** {@code troupe.node.id}: 0 by default, carried into the storage settings, 0..63 only. */
class NodeIdSettingTest {
  private static Config withNodeId(String value) {
    return ConfigFactory.parseString("troupe.node.id = " + value)
        .withFallback(ConfigFactory.load());
  }

  @Test
  void defaultsToZeroAndReachesTheStore() {
    assertEquals(0, RuntimeSettings.fromConfig(ConfigFactory.load()).storage().nodeId());
    assertEquals(63, RuntimeSettings.fromConfig(withNodeId("63")).storage().nodeId());
  }

  @Test
  void outsideZeroToSixtyThreeIsRefused() {
    assertThrows(IllegalArgumentException.class, () -> RuntimeSettings.fromConfig(withNodeId("64")));
    assertThrows(IllegalArgumentException.class, () -> RuntimeSettings.fromConfig(withNodeId("-1")));
  }
}
