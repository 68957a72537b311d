package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.LongNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Listing one type's entities: all of them, none of another type's, page by page. */
class EntitiesOfTypeTest {
  @TempDir Path directory;

  @Test
  void listsExactlyTheEntitiesOfOneTypeNameAcrossEntityLengths() {
    List<EntityId> entities = new ArrayList<>();
    // Type names that are prefixes of each other, ids of many lengths, so that runs of the type
    // are interleaved with other types' entities in storage order.
    for (String type : List.of("A", "AB", "B", "Ab", "ZZZ")) {
      for (String id : List.of("1", "22", "333", "x", "yy", "a-much-longer-id-0001")) {
        entities.add(new EntityId(type, id));
      }
    }
    try (RocksStore store = RocksStore.open(Fixtures.settings(directory),
        new FakeClock(Fixtures.START_MILLIS))) {
      for (EntityId entity : entities) {
        store.commit(store.newTransactionId(), List.of(Fixtures.write(entity,
            new Operation.Assign("n", LongNode.valueOf(1))))).join();
      }
      EntityId deleted = new EntityId("A", "22");
      store.commit(store.newTransactionId(), List.of(Fixtures.write(deleted,
          new Operation.DeleteEntity()))).join();
      for (String type : List.of("A", "AB", "B", "Ab", "ZZZ")) {
        Set<EntityId> expected = new TreeSet<>(java.util.Comparator.comparing(EntityId::toString));
        entities.stream().filter(entity -> entity.type().equals(type)).forEach(expected::add);
        assertEquals(expected, allPages(store, type, 1000), type);
        assertEquals(expected, allPages(store, type, 2), type + " in pages of 2");
      }
      assertEquals(Set.of(), allPages(store, "C", 10));
      assertEquals(Set.of(), allPages(store, "A\u00e9", 10));
      // After checkpoints the entities are still found (in either column).
      store.checkpointNow();
      assertEquals(6, allPages(store, "AB", 4).size());
    }
  }

  private static Set<EntityId> allPages(RocksStore store, String type, int pageSize) {
    Set<EntityId> all = new TreeSet<>(java.util.Comparator.comparing(EntityId::toString));
    EntityId after = null;
    while (true) {
      List<EntityId> page = store.entitiesOfType(type, after, pageSize);
      for (EntityId entity : page) {
        assertEquals(type, entity.type());
        assertEquals(true, all.add(entity), "listed twice: " + entity);
      }
      if (page.size() < pageSize) {
        return all;
      }
      after = page.get(page.size() - 1);
    }
  }
}
