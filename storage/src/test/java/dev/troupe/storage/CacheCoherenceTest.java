package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Concurrent commits and reads through the object cache: readers never see a version go backwards,
 * a committer always reads its own acknowledged write, and at the end every cached state equals a
 * fresh materialization from the database. A tiny cache forces constant eviction and reloading, so
 * loads race with the writer's cache updates.
 */
class CacheCoherenceTest {
  @TempDir Path directory;

  @Test
  void cachedStatesStayCoherentUnderConcurrency() throws Exception {
    int writers = 4;
    int entitiesPerWriter = 3;
    int commitsPerWriter = 150;
    StorageSettings settings =
        Fixtures.settings(directory)
            .withDurability(Durability.ASYNC)
            .withCacheMaxWeightBytes(2_000)
            .withCheckpoints(7, 1_000_000, 50);
    List<EntityId> entities = new ArrayList<>();
    for (int i = 0; i < writers * entitiesPerWriter; i++) {
      entities.add(new EntityId("Counter", "c" + i));
    }
    Map<EntityId, Long> sums = new ConcurrentHashMap<>();
    AtomicReference<Throwable> problem = new AtomicReference<>();
    AtomicBoolean done = new AtomicBoolean();
    try (RocksStore store = RocksStore.open(settings, System::currentTimeMillis)) {
      CountDownLatch start = new CountDownLatch(1);
      List<Thread> threads = new ArrayList<>();
      for (int w = 0; w < writers; w++) {
        List<EntityId> own = entities.subList(w * entitiesPerWriter, (w + 1) * entitiesPerWriter);
        threads.add(
            new Thread(
                () -> guard(problem, () -> {
                  start.await();
                  for (int i = 0; i < commitsPerWriter; i++) {
                    EntityId entity = own.get(i % own.size());
                    long by = ThreadLocalRandom.current().nextLong(-3, 10);
                    Committed committed =
                        store
                            .commit(
                                store.newTransactionId(),
                                List.of(Fixtures.write(entity, new Operation.Increment("n", by))))
                            .join();
                    long sum = sums.merge(entity, by, Long::sum);
                    EntityState state = store.read(entity);
                    assertTrue(state.version() >= committed.commitTimestamp(), "read-your-writes");
                    // This thread is the only writer of the entity: the value is exactly its sum.
                    assertEquals(sum, Fixtures.counter(state, "n"));
                  }
                })));
      }
      for (int r = 0; r < 2; r++) {
        threads.add(
            new Thread(
                () -> guard(problem, () -> {
                  Map<EntityId, Long> seen = new java.util.HashMap<>();
                  start.await();
                  while (!done.get()) {
                    EntityId entity =
                        entities.get(ThreadLocalRandom.current().nextInt(entities.size()));
                    EntityState state = store.read(entity);
                    long previous = seen.getOrDefault(entity, 0L);
                    assertTrue(
                        state.version() >= previous,
                        entity + " went back from " + previous + " to " + state.version());
                    seen.put(entity, state.version());
                    long at = store.currentTimestamp();
                    EntityState snapshot = store.readAt(entity, at);
                    assertTrue(snapshot.version() <= at);
                    assertTrue(snapshot.version() >= state.version());
                  }
                })));
      }
      threads.forEach(Thread::start);
      start.countDown();
      for (int i = 0; i < writers; i++) {
        threads.get(i).join();
      }
      done.set(true);
      for (Thread thread : threads) {
        thread.join();
      }
      if (problem.get() != null) {
        throw new AssertionError("a worker failed", problem.get());
      }
      for (EntityId entity : entities) {
        EntityState cached = store.read(entity);
        EntityState fresh =
            store.materializer.materialize(entity, Long.MAX_VALUE, null);
        assertEquals(fresh, cached, entity.toString());
        assertEquals(sums.getOrDefault(entity, 0L), Fixtures.counter(cached, "n"));
      }
      assertEquals((long) writers * commitsPerWriter, store.statistics().commits());
      assertTrue(store.statistics().cacheMisses() > 0);
    }
  }

  /**
   * The cache holds a loaded state encoded (issue 20, memory): one entry object per cached
   * version, whose decoding is the state a materialization gives, read latest and as of its
   * version alike, and whose estimate counts its bytes (the decoded estimate is kept beside it for
   * actors); a commit leaves it decoded, weighed as such, until a checkpoint round encodes it,
   * except a record that only assigns existing registers of a plain state, applied in place.
   */
  @Test
  void aCachedStateIsOneEncodedEntryPerVersion() throws Exception {
    EntityId entity = new EntityId("Record", "r1");
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
          new Operation.Assign("name", dev.troupe.model.Json.NODES.textNode("x".repeat(500))),
          new Operation.Increment("n", 3)))).join();
      CachedState first = store.readCached(entity);
      assertTrue(first == store.readCached(entity), "the same entry while the version stays");
      long hits = store.statistics().cacheHits();
      long misses = store.statistics().cacheMisses();
      assertTrue(first == store.readCachedIfPresent(entity), "the same entry, one lookup");
      assertEquals(hits + 1, store.statistics().cacheHits(), "a hit, counted once");
      assertEquals(null, store.readCachedIfPresent(new EntityId("Record", "absent")));
      assertEquals(misses, store.statistics().cacheMisses(), "a miss is counted by its load only");
      assertEquals(store.materializer.materialize(entity, Long.MAX_VALUE, null), first.state());
      assertEquals(first.state(), store.read(entity));
      assertEquals(first.state(), store.readAt(entity, first.version()));
      assertTrue(first.exists() && !first.holdsDependencies());
      int encoded = Codec.encodeState(first.state()).length;
      assertEquals(CachedState.ENTRY_OVERHEAD_BYTES + ((encoded + 7) & ~7)
          + entity.type().length() + entity.id().length(), store.cacheEntryWeightBytes(entity));
      assertEquals(Codec.estimateWeight(first.state()) + 48
          + 2 * (entity.type().length() + entity.id().length()), store.cachedWeightBytes(entity));

      Committed second = store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
          new Operation.Increment("n", 4)))).join();
      CachedState next = store.readCached(entity);
      assertTrue(next != first, "a new version is a new entry");
      assertTrue(!next.isEncoded(), "written since the last checkpoint round: held decoded");
      assertEquals(second.commitTimestamp(), next.version());
      assertEquals(7, Fixtures.counter(next.state(), "n"));
      assertEquals(store.materializer.materialize(entity, Long.MAX_VALUE, null), next.state());
      assertEquals(next.decodedWeight(), store.cacheEntryWeightBytes(entity));
      assertEquals(first.state(), store.readAt(entity, first.version()), "history read anew");

      store.checkpointNow();
      CachedState checkpointed = store.readCached(entity);
      assertTrue(checkpointed.isEncoded(), "a checkpoint round encodes it again");
      assertEquals(next.version(), checkpointed.version());
      assertEquals(next.state(), checkpointed.state());

      // A record assigning existing registers of a plain state (a YCSB update) is applied to the
      // encoded entry in place: a new entry, still encoded, the state a materialization gives,
      // and the checkpoint round writes its bytes as they are.
      EntityId plain = new EntityId("Record", "r2");
      store.commit(store.newTransactionId(), List.of(Fixtures.write(plain,
          new Operation.Assign("a", dev.troupe.model.Json.NODES.textNode("1\u007f\"")),
          new Operation.Assign("b", dev.troupe.model.Json.NODES.textNode("2"))))).join();
      store.checkpointNow();
      CachedState loaded = store.readCached(plain);
      assertTrue(loaded.isEncoded());
      Committed update = store.commit(store.newTransactionId(), List.of(Fixtures.write(plain,
          new Operation.Assign("b", dev.troupe.model.Json.NODES.textNode("3"))))).join();
      CachedState updated = store.readCached(plain);
      assertTrue(updated != loaded && updated.isEncoded(), "applied in place: a new entry, encoded");
      assertEquals(update.commitTimestamp(), updated.version());
      assertEquals(store.materializer.materialize(plain, Long.MAX_VALUE, null), updated.state());
      assertEquals(CachedState.of(plain, updated.state()).weight(),
          store.cacheEntryWeightBytes(plain));
      assertEquals(CachedState.of(plain, updated.state()).decodedWeight(),
          store.cachedWeightBytes(plain));
      store.checkpointNow();
      assertTrue(updated == store.readCached(plain), "the round takes the encoded bytes as they are");

      assertEquals(0, store.cacheEntryWeightBytes(new EntityId("Record", "never")));
      assertEquals(null, store.readCachedIfPresent(new EntityId("Record", "never")));
      assertTrue(!store.isCached(new EntityId("Record", "never")), "absent: nothing loaded");
    }
  }

  /**
   * A miss on an entity checkpointed since its last write (issue 20: a miss served from its
   * checkpoint's bytes) caches the checkpoint's bytes as they are: the entry a decoding would
   * make, the same answers; with a record after the checkpoint the state is materialized as
   * before; a damaged checkpoint answers corrupt_data and nothing is cached.
   */
  @Test
  void aMissOnACheckpointedEntityCachesTheCheckpointsBytes() throws Exception {
    EntityId plain = new EntityId("Record", "plain");
    EntityId written = new EntityId("Record", "written");
    EntityId damaged = new EntityId("Record", "damaged");
    Map<EntityId, EntityState> expected = new java.util.HashMap<>();
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      for (EntityId entity : List.of(plain, written, damaged)) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
            new Operation.Assign("field0", dev.troupe.model.Json.NODES.textNode("a\"b\\c\u007f")),
            new Operation.Assign("field1", dev.troupe.model.Json.NODES.numberNode(-42L)))))
            .join();
      }
      store.checkpointNow();
      store.commit(store.newTransactionId(), List.of(Fixtures.write(written,
          new Operation.Assign("field1", dev.troupe.model.Json.NODES.booleanNode(true))))).join();
      for (EntityId entity : List.of(plain, written, damaged)) {
        expected.put(entity, store.materializer.materialize(entity, Long.MAX_VALUE, null));
      }
    }
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      byte[] checkpoint = store.materializer.latest(plain, null).checkpoint();
      assertTrue(checkpoint != null, "no record after the checkpoint: its bytes");
      CachedState loaded = store.readCached(plain);
      assertEquals(1, store.loadsFromCheckpointBytes.sum());
      assertTrue(loaded.isEncoded());
      org.junit.jupiter.api.Assertions.assertArrayEquals(checkpoint, loaded.encoded());
      CachedState decodedWay = CachedState.of(plain, Codec.decodeState(checkpoint));
      assertEquals(decodedWay.weight(), loaded.weight());
      assertEquals(decodedWay.decodedWeight(), loaded.decodedWeight());
      assertEquals(decodedWay.version(), loaded.version());
      assertTrue(loaded.exists() && !loaded.holdsDependencies());
      assertEquals(expected.get(plain), loaded.state());
      assertEquals(expected.get(plain), store.read(plain));
      assertTrue(loaded == store.readCached(plain), "cached");

      Materializer.Latest afterCheckpoint = store.materializer.latest(written, null);
      assertTrue(afterCheckpoint.checkpoint() == null, "a record after the checkpoint: applied");
      assertEquals(expected.get(written), afterCheckpoint.state());
      assertEquals(expected.get(written), store.readCached(written).state());
      assertEquals(1, store.loadsFromCheckpointBytes.sum(), "materialized, as before");

      // Damage the checkpoint's bytes on disk (checksum no longer matching).
      byte[] prefix = Keys.entityPrefix(damaged);
      byte[] key;
      byte[] value;
      try (KeyValueDisk.Cursor cursor = store.disk.cursor(KeyValueDisk.Column.CHECKPOINTS, null,
          prefix, Keys.entityUpperBound(prefix))) {
        cursor.seek(prefix);
        key = cursor.key();
        value = cursor.value();
      }
      value[value.length / 2] ^= 0x10;
      try (KeyValueDisk.Batch batch = store.disk.newBatch()) {
        batch.put(KeyValueDisk.Column.CHECKPOINTS, key, value);
        store.disk.write(batch, true);
      }
      for (int attempt = 0; attempt < 2; attempt++) {
        dev.troupe.model.TroupeException refused = org.junit.jupiter.api.Assertions.assertThrows(
            dev.troupe.model.TroupeException.class, () -> store.readCached(damaged));
        assertEquals(dev.troupe.model.ErrorCode.CORRUPT_DATA, refused.code());
        assertTrue(!store.isCached(damaged), "nothing damaged is cached");
      }
      assertEquals(2, store.health().corruptionsDetected(), "every damaged read is counted");
    }
  }

  /**
   * A state of more than 16 keys (a SmallBank branch) is held decoded whatever happens: every read
   * of an encoded entry decodes it again, which for such a state costs more than the memory saved.
   */
  @Test
  void aLargeStateIsHeldDecodedAcrossCheckpointRoundsAndLoads() throws Exception {
    EntityId branch = new EntityId("Branch", "b1");
    EntityId record = new EntityId("Record", "r1");
    List<Operation> members = new java.util.ArrayList<>();
    for (int i = 0; i <= dev.troupe.model.SmallPersistentMap.MAX_SIZE; i++) {
      members.add(new Operation.Increment("checking[c" + i + "]", i));
    }
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      store.commit(store.newTransactionId(), List.of(new EntityWrite(branch, members))).join();
      store.commit(store.newTransactionId(), List.of(new EntityWrite(record,
          members.subList(0, dev.troupe.model.SmallPersistentMap.MAX_SIZE)))).join();
      store.checkpointNow();
      assertTrue(!store.readCached(branch).isEncoded(), "17 keys: still decoded after a round");
      assertTrue(store.readCached(record).isEncoded(), "16 keys: encoded by the round");
      assertEquals(store.readCached(branch).decodedWeight(), store.cacheEntryWeightBytes(branch));
    }
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      assertTrue(!store.readCached(branch).isEncoded(), "17 keys: loaded decoded");
      assertTrue(store.readCached(record).isEncoded(), "16 keys: loaded encoded");
      assertEquals(16, Fixtures.counter(store.read(branch), "checking[c16]"));
    }
  }

  /**
   * A small state with dependency records (a marketplace product) is held decoded across rounds
   * and loads too: the planner's reconnaissance reads it on every planned transaction naming it.
   */
  @Test
  void aStateWithDependencyRecordsIsHeldDecodedAcrossCheckpointRoundsAndLoads() throws Exception {
    EntityId product = new EntityId("Product", "p1");
    dev.troupe.model.dependency.Dependency replica = new dev.troupe.model.dependency.Dependency(
        dev.troupe.model.dependency.DependencyKind.UPDATE,
        new dev.troupe.model.dependency.KeyReference(product, "price"),
        new dev.troupe.model.dependency.KeyReference(new EntityId("Cart", "c1"), "item[p1]"),
        new dev.troupe.model.dependency.DependencyFunction.Replicate());
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      store.commit(store.newTransactionId(), List.of(new EntityWrite(product, List.of(
          new Operation.Increment("price", 5), new Operation.RecordDependency(
              dev.troupe.model.dependency.DependencyKeys.outgoing("price"), replica, null)))))
          .join();
      store.checkpointNow();
      assertTrue(!store.readCached(product).isEncoded(), "with dependencies: decoded after a round");
      assertTrue(store.readCached(product).holdsDependencies());
    }
    try (RocksStore store = RocksStore.open(
        Fixtures.settings(directory).withDurability(Durability.ASYNC),
        System::currentTimeMillis)) {
      CachedState loaded = store.readCached(product);
      assertTrue(!loaded.isEncoded(), "with dependencies: loaded decoded");
      assertEquals(loaded.decodedWeight(), store.cacheEntryWeightBytes(product));
      assertEquals(replica, ((dev.troupe.model.value.DependencyTable) loaded.state().get(
          dev.troupe.model.dependency.DependencyKeys.outgoing("price"))).get(replica.id())
          .dependency());
    }
  }

  interface Body {
    void run() throws Exception;
  }

  private static void guard(AtomicReference<Throwable> problem, Body body) {
    try {
      body.run();
    } catch (Throwable t) {
      problem.compareAndSet(null, t);
    }
  }
}
