package dev.troupe.txn.entity;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import java.util.ArrayList;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class RememberedEntitiesTest {
  private static EntityId entity(int number) {
    return new EntityId("Item", "user" + number);
  }

  @Test
  void remembersEveryEntityOfAFullGenerationAndFewOthers() {
    RememberedEntities remembered = new RememberedEntities(100_000, 60_000);
    for (int number = 0; number < 100_000; number++) {
      remembered.remember(entity(number), 1_000);
    }
    for (int number = 0; number < 100_000; number++) {
      assertTrue(remembered.remembers(entity(number), 2_000), "no false negative: " + number);
    }
    int falsePositives = 0;
    for (int number = 100_000; number < 200_000; number++) {
      if (remembered.remembers(entity(number), 2_000)) {
        falsePositives++;
      }
    }
    // About 1 % by design; 2 % would mean the filter is sized wrong.
    assertTrue(falsePositives < 2_000, "false positives: " + falsePositives);
  }

  @Test
  void forgetsTheOldestGenerationWhenTheNewestIsFull() {
    RememberedEntities remembered = new RememberedEntities(1_000, 60_000);
    for (int number = 0; number < 3_000; number++) {
      remembered.remember(entity(number), 1_000);
    }
    // 0-999 | 1,000-1,999 | 2,000-2,999: the first generation is dropped.
    assertEquals(2_000, remembered.rememberedCount());
    for (int number = 1_000; number < 3_000; number++) {
      assertTrue(remembered.remembers(entity(number), 1_000), "remembered: " + number);
    }
    int stillAnswered = 0;
    for (int number = 0; number < 1_000; number++) {
      if (remembered.remembers(entity(number), 1_000)) {
        stillAnswered++;
      }
    }
    assertTrue(stillAnswered < 40, "forgotten but answered (false positives): " + stillAnswered);
  }

  @Test
  void forgetsWithTime() {
    RememberedEntities remembered = new RememberedEntities(1_000, 10_000);
    remembered.remember(entity(1), 0);
    assertTrue(remembered.remembers(entity(1), 9_999));
    // A new generation began at 10,000: entity 1 is in the previous one, still answering.
    remembered.remember(entity(2), 10_000);
    assertTrue(remembered.remembers(entity(1), 19_999));
    // At 20,000 the generation of entity 2 ends and entity 1's is dropped.
    assertFalse(remembered.remembers(entity(1), 20_000));
    assertTrue(remembered.remembers(entity(2), 20_000));
    // Idle for two generations: both dropped at once.
    assertFalse(remembered.remembers(entity(2), 40_000));
    assertEquals(0, remembered.rememberedCount());
  }

  /**
   * The promise, against a model: an entity remembered at {@code t} is answered as long as less
   * than a generation's time has passed and fewer than a generation's count of entities were
   * remembered after it.
   */
  @Property(tries = 200)
  void noFalseNegativeWithinTheGuarantee(
      @ForAll @Size(min = 1, max = 300) List<@IntRange(min = 0, max = 400) Integer> stepsMillis,
      @ForAll @IntRange(min = 1, max = 50) int entitiesPerGeneration) {
    long generationMillis = 1_000;
    RememberedEntities remembered = new RememberedEntities(entitiesPerGeneration,
        generationMillis);
    List<long[]> history = new ArrayList<>(); // {number, rememberedAtMillis}
    long nowMillis = 0;
    int number = 0;
    for (int step : stepsMillis) {
      nowMillis += step;
      remembered.remember(entity(number), nowMillis);
      history.add(new long[] {number, nowMillis});
      number++;
      for (int index = 0; index < history.size(); index++) {
        long[] past = history.get(index);
        int rememberedAfter = history.size() - 1 - index;
        if (nowMillis - past[1] < generationMillis && rememberedAfter < entitiesPerGeneration) {
          assertTrue(remembered.remembers(entity((int) past[0]), nowMillis),
              "entity " + past[0] + " remembered at " + past[1] + ", asked at " + nowMillis);
        }
      }
    }
  }
}
