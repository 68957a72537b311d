package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.Invariants.InvariantViolation;
import dev.troupe.model.Operation.AddElement;
import dev.troupe.model.Operation.Assign;
import dev.troupe.model.Operation.DeleteEntity;
import dev.troupe.model.Operation.DeleteKey;
import dev.troupe.model.Operation.Increment;
import dev.troupe.model.Operation.RemoveElement;
import dev.troupe.model.value.CounterValue;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.model.value.SetValue;
import dev.troupe.model.value.Tag;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

class EntityStateTest {
  private static final int DC = 1;

  /** Write counts per origin data centre, within one record and across records and origins. */
  @Test
  void writeCountsCountEveryWriteOfEveryOrigin() {
    EntityState state = EntityState.ABSENT.apply(List.of(new Assign("a", Json.parse("1")),
        new Increment("b", 2), new Assign("c", Json.parse("3"))), 10, DC);
    assertEquals(Map.of(DC, 3L), state.writeCounts());
    state = state.apply(List.of(new Assign("a", Json.parse("4"))), 11, DC);
    assertEquals(Map.of(DC, 4L), state.writeCounts());
    state = state.apply(List.of(new Assign("a", Json.parse("5")),
        new Operation.AssignReplicated("d", Json.parse("6"), 5, 2)), 12, DC);
    assertEquals(Map.of(DC, 5L, 2, 1L), state.writeCounts());
    state = state.apply(List.of(new Assign("a", Json.parse("7"))), 13, DC);
    assertEquals(Map.of(DC, 6L, 2, 1L), state.writeCounts());
    EntityState other = EntityState.ABSENT.apply(List.of(
        new Operation.AssignReplicated("d", Json.parse("6"), 5, 2), new Assign("a", Json.parse("1")),
        new Assign("b", Json.parse("1"))), 14, DC);
    assertEquals(Map.of(DC, 2L, 2, 1L), other.writeCounts());
    EntityState deleted = state.apply(List.of(new DeleteEntity()), 15, DC);
    assertFalse(deleted.exists());
    assertTrue(deleted.apply(List.of(new Assign("a", Json.parse("8"))), 16, DC).exists());
  }

  @Test
  void anAbsentEntityHasNothing() {
    assertFalse(EntityState.ABSENT.exists());
    assertEquals(0, EntityState.ABSENT.version());
    assertEquals(Map.of(), EntityState.ABSENT.values());
  }

  @Test
  void applyingAdvancesTheVersionAndCreatesTheEntity() {
    EntityState state =
        EntityState.ABSENT.apply(List.of(new Assign("name", Json.parse("\"ada\""))), 10, DC);
    assertTrue(state.exists());
    assertEquals(10, state.version());
    assertEquals(new RegisterValue(Json.parse("\"ada\""), 10, DC), state.get("name"));
  }

  @Test
  void versionsMustIncrease() {
    EntityState state =
        EntityState.ABSENT.apply(List.of(new Assign("name", Json.parse("1"))), 10, DC);
    List<Operation> next = List.of(new Assign("name", Json.parse("2")));
    assertThrows(InvariantViolation.class, () -> state.apply(next, 10, DC), "same version");
    assertThrows(InvariantViolation.class, () -> state.apply(next, 9, DC), "older version");
    assertThrows(
        InvariantViolation.class,
        () -> EntityState.ABSENT.apply(next, 0, DC),
        "a first record still needs a positive timestamp");
    // The failed attempts changed nothing.
    assertEquals(new RegisterValue(Json.parse("1"), 10, DC), state.get("name"));
    assertEquals(11, state.apply(next, 11, DC).version());
  }

  @Test
  void deleteEntityClearsAndMarksAbsent() {
    EntityState state =
        EntityState.ABSENT.apply(
            List.of(
                new Assign("name", Json.parse("\"ada\"")),
                new Increment("visits", 3),
                new AddElement("tags", Json.parse("\"x\""), new Tag(DC, 1, 2))),
            1,
            DC);
    EntityState deleted = state.apply(List.of(new DeleteEntity()), 2, DC);
    assertFalse(deleted.exists());
    assertEquals(Map.of(), deleted.values());
    assertEquals(2, deleted.version(), "a delete is a version like any other record");
  }

  @Test
  void aWriteAfterDeleteRecreates() {
    EntityState deleted =
        EntityState.ABSENT
            .apply(List.of(new Assign("name", Json.parse("\"ada\""))), 1, DC)
            .apply(List.of(new DeleteEntity()), 2, DC);
    EntityState recreated = deleted.apply(List.of(new Increment("visits", 1)), 3, DC);
    assertTrue(recreated.exists());
    assertNull(recreated.get("name"), "keys from before the delete stay gone");
    assertEquals(1, ((CounterValue) recreated.get("visits")).total());

    EntityState sameRecord =
        EntityState.ABSENT
            .apply(List.of(new Assign("name", Json.parse("\"ada\""))), 1, DC)
            .apply(List.of(new DeleteEntity(), new Assign("city", Json.parse("\"Paris\""))), 2, DC);
    assertTrue(sameRecord.exists(), "a write after the delete in the same record recreates");
    assertEquals(Set.of("city"), sameRecord.values().keySet());
  }

  @Test
  void deleteKeyRemovesOneKey() {
    EntityState state =
        EntityState.ABSENT.apply(
            List.of(new Assign("a", Json.parse("1")), new Assign("b", Json.parse("2"))), 1, DC);
    EntityState after = state.apply(List.of(new DeleteKey("a")), 2, DC);
    assertEquals(Set.of("b"), after.values().keySet());
    assertTrue(after.exists());
  }

  @Test
  void setAndCounterOperationsStartFromEmpty() {
    Tag tag = new Tag(DC, 7, 0);
    EntityState state =
        EntityState.ABSENT.apply(
            List.of(
                new RemoveElement("tags", Json.parse("\"x\""), Set.of(tag)),
                new Increment("visits", -2),
                new AddElement("tags", Json.parse("\"y\""), tag)),
            1,
            DC);
    assertEquals(-2, ((CounterValue) state.get("visits")).total());
    SetValue tags = (SetValue) state.get("tags");
    assertTrue(tags.contains(Json.parse("\"y\"")));
    assertFalse(tags.contains(Json.parse("\"x\"")));
    assertEquals(Set.of(tag), tags.tagsOf(Json.parse("\"y\"")));
  }

  @Test
  void applyingDoesNotChangeTheOriginal() {
    EntityState state =
        EntityState.ABSENT.apply(List.of(new Assign("name", Json.parse("1"))), 1, DC);
    RegisterValue before = (RegisterValue) state.get("name");
    state.apply(List.of(new Assign("name", Json.parse("2")), new DeleteKey("name")), 2, DC);
    assertSame(before, state.get("name"));
    assertThrows(UnsupportedOperationException.class, () -> state.values().clear());
  }
}
