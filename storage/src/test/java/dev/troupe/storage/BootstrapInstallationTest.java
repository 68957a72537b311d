package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import dev.troupe.model.TroupeException;
import dev.troupe.model.causal.BootstrapImage;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicaApplication;
import dev.troupe.model.value.RegisterValue;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Installing a bootstrap image (docs/ARCHITECTURE.md, "Bootstrapping a new data centre"): states
 * as checkpoints with the installed marker at a version of this store's clock, the start vector as
 * received and applied vectors with the completion record, every entity enumerated, refusal on a
 * store with data, and a crash mid-install (simulated power loss of the disk) started over.
 */
class BootstrapInstallationTest {
  private static final int HERE = 3003;
  private static final int SOURCE = 1001;
  private static final int OTHER = 2002;
  /** The source's clock runs far ahead of this one's: installed versions must still be below it. */
  private static final long SOURCE_AHEAD = 1L << 40;

  private static StorageSettings settings(Path directory) {
    return Fixtures.settings(directory).withDataCentreId(HERE).withReplicationLog(true);
  }

  private static List<BootstrapImage.EntityImage> images(int from, int count) {
    List<BootstrapImage.EntityImage> images = new ArrayList<>();
    for (int i = from; i < from + count; i++) {
      long version = SOURCE_AHEAD + 1000 + i;
      EntityState state = EntityState.ABSENT.apply(List.of(
          new Operation.Increment("n", i),
          new Operation.Assign(ReplicaApplication.markerKey(OTHER),
              com.fasterxml.jackson.databind.node.LongNode.valueOf(500))), version, SOURCE);
      images.add(new BootstrapImage.EntityImage(new EntityId(i % 2 == 0 ? "A" : "Bee", "e" + i),
          version, state));
    }
    return images;
  }

  private static final DependencyVector START =
      DependencyVector.of(Map.of(SOURCE, SOURCE_AHEAD + 900, OTHER, 600L, HERE, 5L));
  private static final DependencyVector END =
      DependencyVector.of(Map.of(SOURCE, SOURCE_AHEAD + 2000, OTHER, 700L));

  @Test
  void anImageIsInstalledAndServedAfterReopening() {
    Path directory = Fixtures.createTempDirectory();
    try {
      try (RocksStore store = RocksStore.open(settings(directory),
          new FakeClock(Fixtures.START_MILLIS))) {
        BootstrapInstallation installation = store.bootstrapInstallation();
        assertEquals(BootstrapInstallation.Progress.NONE, installation.progress());
        assertFalse(installation.holdsData());
        installation.begin(SOURCE);
        long first = installation.install(SOURCE, images(0, 5));
        long second = installation.install(SOURCE, images(5, 5));
        assertTrue(first > SOURCE_AHEAD + 1009 && second > first, first + " " + second);
        installation.complete(SOURCE, START, END);
        assertEquals(new BootstrapInstallation.Progress(BootstrapInstallation.Phase.INSTALLED,
            SOURCE, END), installation.progress());
      }
      try (RocksStore store = RocksStore.open(settings(directory),
          new FakeClock(Fixtures.START_MILLIS))) {
        DependencyVector expected = DependencyVector.of(Map.of(SOURCE, SOURCE_AHEAD + 900,
            OTHER, 600L));
        assertEquals(expected, store.replicationLog().appliedVector());
        assertEquals(600L, store.replicationLog().receivedVector().get(OTHER));
        List<EntityId> all = new ArrayList<>();
        for (List<EntityId> page = store.entities(null, 3); !page.isEmpty();
            page = store.entities(page.get(page.size() - 1), 3)) {
          all.addAll(page);
        }
        assertEquals(10, all.size(), all.toString());
        EntityState state = store.read(new EntityId("Bee", "e7"));
        assertEquals(7, Fixtures.counter(state, "n"));
        assertEquals(SOURCE_AHEAD + 1007, ((RegisterValue) state.get(
            ReplicaApplication.installedKey(SOURCE))).value().asLong());
        assertTrue(state.get(ReplicaApplication.markerKey(OTHER)) instanceof RegisterValue);
        // A commit after the installation is above the installed version, also after a restart.
        long committed = store.commit(store.newTransactionId(), List.of(Fixtures.write(
            new EntityId("Bee", "e7"), new Operation.Increment("n", 1)))).join().commitTimestamp();
        assertTrue(committed > state.version());
        assertEquals(8, Fixtures.counter(store.read(new EntityId("Bee", "e7")), "n"));
        store.bootstrapInstallation().finish();
        assertEquals(BootstrapInstallation.Progress.NONE,
            store.bootstrapInstallation().progress());
        // A store with data takes no image.
        assertThrows(TroupeException.class, () -> store.bootstrapInstallation().begin(SOURCE));
      }
    } finally {
      Fixtures.deleteRecursively(directory);
    }
  }

  @Test
  void aCrashMidInstallIsStartedOverFromNothing() {
    FakeClock clock = new FakeClock(Fixtures.START_MILLIS);
    MemoryDisk disk = new MemoryDisk();
    StorageSettings settings = settings(Path.of("memory-disk"));
    RocksStore store = RocksStore.open(settings, clock, disk, RocksStore.Execution.STEPPED);
    store.bootstrapInstallation().begin(SOURCE);
    store.bootstrapInstallation().install(SOURCE, images(0, 6));
    // Power loss keeping whatever prefix of the unsynced installs.
    MemoryDisk crashed = disk.crash(new SplittableRandom(7), 1.0);
    RocksStore restarted = RocksStore.open(settings, clock, crashed, RocksStore.Execution.STEPPED);
    BootstrapInstallation installation = restarted.bootstrapInstallation();
    assertEquals(BootstrapInstallation.Phase.STARTED, installation.progress().phase());
    // Another source is refused; the same one starts over on nothing.
    assertThrows(TroupeException.class, () -> installation.begin(OTHER));
    installation.begin(SOURCE);
    assertFalse(installation.holdsData());
    installation.install(SOURCE, images(3, 2));
    installation.complete(SOURCE, START, END);
    RocksStore served = RocksStore.open(settings, clock, crashed.crash(new SplittableRandom(8),
        0), RocksStore.Execution.STEPPED);
    assertEquals(List.of(new EntityId("Bee", "e3"), new EntityId("A", "e4")).size(),
        served.entities(null, 100).size());
    assertEquals(4, Fixtures.counter(served.read(new EntityId("A", "e4")), "n"));
    assertEquals(BootstrapInstallation.Phase.INSTALLED,
        served.bootstrapInstallation().progress().phase());
    served.close();
  }
}
