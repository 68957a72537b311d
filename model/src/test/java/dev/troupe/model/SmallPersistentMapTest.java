package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;
import org.pcollections.PMap;

class SmallPersistentMapTest {
  /**
   * Random additions, replacements and removals, across the size where a small map becomes a
   * {@link LargePersistentMap}, against a HashMap: the same entries after every step, every
   * earlier version unchanged (persistence), and small maps iterating in key order.
   */
  @Test
  void behavesAsAMapAndKeepsEveryVersion() {
    for (long seed = 1; seed <= 200; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      PMap<String, Integer> map = SmallPersistentMap.empty();
      Map<String, Integer> expected = new HashMap<>();
      List<PMap<String, Integer>> versions = new ArrayList<>();
      List<Map<String, Integer>> expectedVersions = new ArrayList<>();
      for (int step = 0; step < 80; step++) {
        String key = "k" + random.nextInt(SmallPersistentMap.MAX_SIZE + 6);
        if (random.nextInt(3) == 0) {
          map = map.minus(key);
          expected.remove(key);
        } else {
          int value = random.nextInt(1000);
          map = map.plus(key, value);
          expected.put(key, value);
        }
        assertEquals(expected, map, "seed " + seed + " step " + step);
        assertEquals(expected.hashCode(), map.hashCode(), "seed " + seed);
        assertEquals(expected.size(), map.size());
        for (int probe = 0; probe < SmallPersistentMap.MAX_SIZE + 6; probe++) {
          assertEquals(expected.get("k" + probe), map.get("k" + probe));
          assertEquals(expected.containsKey("k" + probe), map.containsKey("k" + probe));
        }
        if (map instanceof SmallPersistentMap<Integer>) {
          assertEquals(new ArrayList<>(new TreeMap<>(expected).keySet()),
              new ArrayList<>(map.keySet()), "key order, seed " + seed);
        }
        versions.add(map);
        expectedVersions.add(new HashMap<>(expected));
      }
      for (int version = 0; version < versions.size(); version++) {
        assertEquals(expectedVersions.get(version), versions.get(version), "seed " + seed);
      }
    }
  }

  @Test
  void growsIntoALargeMapPastItsSize() {
    PMap<String, Integer> map = SmallPersistentMap.empty();
    for (int i = 0; i < SmallPersistentMap.MAX_SIZE; i++) {
      map = map.plus("k" + i, i);
    }
    assertInstanceOf(SmallPersistentMap.class, map);
    PMap<String, Integer> grown = map.plus("another", 1);
    assertInstanceOf(LargePersistentMap.class, grown);
    assertEquals(SmallPersistentMap.MAX_SIZE + 1, grown.size());
    assertEquals(SmallPersistentMap.MAX_SIZE, map.size(), "the small map is unchanged");
    Map<String, Integer> many = new HashMap<>(grown);
    assertInstanceOf(LargePersistentMap.class, SmallPersistentMap.from(many));
  }

  /**
   * A large map (a key family's members) under random single and bulk changes over 300 keys,
   * against a HashMap: the same entries, iteration, equality and hash after every step, and every
   * earlier version unchanged.
   */
  @Test
  void largeMapsBehaveAsMapsAndKeepEveryVersion() {
    for (long seed = 1; seed <= 40; seed++) {
      SplittableRandom random = new SplittableRandom(seed);
      Map<String, Integer> expected = new HashMap<>();
      for (int i = 0; i < 40; i++) {
        expected.put("member:" + random.nextInt(300), i);
      }
      PMap<String, Integer> map = LargePersistentMap.from(expected);
      List<PMap<String, Integer>> versions = new ArrayList<>();
      List<Map<String, Integer>> expectedVersions = new ArrayList<>();
      for (int step = 0; step < 60; step++) {
        switch (random.nextInt(4)) {
          case 0 -> {
            String key = "member:" + random.nextInt(300);
            map = map.minus(key);
            expected.remove(key);
          }
          case 1 -> {
            Map<String, Integer> added = new HashMap<>();
            for (int i = random.nextInt(20); i > 0; i--) {
              added.put("member:" + random.nextInt(300), random.nextInt(1000));
            }
            map = map.plusAll(added);
            expected.putAll(added);
          }
          case 2 -> {
            List<String> removed = new ArrayList<>();
            for (int i = random.nextInt(10); i > 0; i--) {
              removed.add("member:" + random.nextInt(300));
            }
            map = map.minusAll(removed);
            removed.forEach(expected::remove);
          }
          default -> {
            String key = "member:" + random.nextInt(300);
            int value = random.nextInt(1000);
            map = map.plus(key, value);
            expected.put(key, value);
          }
        }
        assertEquals(expected, map, "seed " + seed + " step " + step);
        assertEquals(map, expected, "seed " + seed + " step " + step);
        assertEquals(expected.hashCode(), map.hashCode(), "seed " + seed);
        assertEquals(expected.size(), map.size());
        Map<String, Integer> iterated = new HashMap<>();
        map.forEach(iterated::put);
        assertEquals(expected, iterated, "forEach, seed " + seed);
        for (int probe = 0; probe < 300; probe += 7) {
          assertEquals(expected.get("member:" + probe), map.get("member:" + probe));
          assertEquals(expected.containsKey("member:" + probe),
              map.containsKey("member:" + probe));
        }
        versions.add(map);
        expectedVersions.add(new HashMap<>(expected));
      }
      for (int version = 0; version < versions.size(); version++) {
        assertEquals(expectedVersions.get(version), versions.get(version), "seed " + seed);
      }
    }
  }

  @Test
  void largeMapsAnswerThemselvesForNoChangeAndRefuseNulls() {
    Map<String, Integer> many = new HashMap<>();
    for (int i = 0; i < 30; i++) {
      many.put("k" + i, 1000 + i);
    }
    PMap<String, Integer> map = LargePersistentMap.from(many);
    assertSame(map, map.plus("k3", map.get("k3")));
    assertSame(map, map.minus("absent"));
    assertSame(map, map.minus(42));
    assertNull(map.get(42));
    assertFalse(map.containsKey(null));
    assertThrows(NullPointerException.class, () -> map.plus(null, 1));
    assertThrows(NullPointerException.class, () -> map.plus("b", null));
    assertThrows(UnsupportedOperationException.class, () -> map.put("b", 2));
  }

  @Test
  void sameValueSameKeyIsTheSameMapAndNullsAreRefused() {
    PMap<String, Integer> map = SmallPersistentMap.<Integer>empty().plus("a", 1000);
    assertSame(map, map.plus("a", map.get("a")));
    assertSame(map, map.minus("absent"));
    assertNull(map.get(42));
    assertFalse(map.containsKey(null));
    assertThrows(NullPointerException.class, () -> map.plus(null, 1));
    assertThrows(NullPointerException.class, () -> map.plus("b", null));
    assertThrows(UnsupportedOperationException.class, () -> map.put("b", 2));
    assertTrue(map.minus("a").isEmpty());
  }

  @Test
  void entityStatesKeepFewKeysSmall() {
    EntityState state = EntityState.ABSENT.apply(List.of(
        new Operation.Assign("b", Json.parse("1")), new Operation.Assign("a", Json.parse("2"))),
        5, 1);
    assertInstanceOf(SmallPersistentMap.class, state.values());
    assertEquals(List.of("a", "b"), new ArrayList<>(state.values().keySet()));
    EntityState copied = new EntityState(new HashMap<>(state.values()), 5, true);
    assertEquals(state.values(), copied.values());
  }
}
