package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.ServerProcess.Answer;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code GET /v1/entities/{type}} on a real server: pages cover every entity present throughout
 * exactly once while other clients insert, delete and re-create entities, in id order; a page at
 * a version is exactly the set of entities a read at that version finds, whatever happens
 * meanwhile; pages past many deleted entities end early with a cursor and lose nothing; bad
 * cursors, limits and versions are refused with 400.
 */
class EntityListingRestTest {
  @TempDir static Path data;
  static ServerProcess server;

  @BeforeAll
  static void start() throws Exception {
    // Small bounds, so that pages end early on deleted entities (max-examined) and a limit
    // above max-limit is easy to ask for.
    server = ServerProcess.start(data.resolve("node"), "troupe.listing.default-limit=10",
        "troupe.listing.max-limit=50", "troupe.listing.max-examined=60");
  }

  @AfterAll
  static void stop() throws Exception {
    server.close();
  }

  @Test
  void pagesCoverEveryEntityPresentThroughoutExactlyOnceUnderInsertsAndDeletes()
      throws Exception {
    Set<String> stable = new TreeSet<>();
    for (int i = 0; i < 120; i++) {
      String id = String.format("s-%03d", i);
      write("Item", id);
      stable.add(id);
    }
    List<String> churned = new ArrayList<>();
    for (int i = 0; i < 60; i++) {
      String id = String.format("c-%03d", i);
      write("Item", id);
      churned.add(id);
    }
    // Every id ever written, and the version of a write in the middle of the churn.
    Set<String> touched = ConcurrentHashMap.newKeySet();
    touched.addAll(stable);
    touched.addAll(churned);
    AtomicLong middle = new AtomicLong();
    AtomicBoolean running = new AtomicBoolean(true);
    List<Throwable> failures = Collections.synchronizedList(new ArrayList<>());
    List<Thread> churners = new ArrayList<>();
    for (int worker = 0; worker < 2; worker++) {
      int seed = worker;
      churners.add(Thread.ofPlatform().start(() -> {
        Random random = new Random(seed);
        int inserted = 0;
        try {
          while (running.get()) {
            String id = churned.get(random.nextInt(churned.size()));
            if (random.nextBoolean()) {
              Answer deleted = server.send("DELETE", "/v1/entities/Item/" + id, null);
              assertTrue(deleted.status() == 200 || deleted.status() == 404, deleted.text());
            } else {
              long version = write("Item", id); // re-created if it was deleted
              middle.compareAndSet(0, version);
            }
            // New ids everywhere in the id order: before, between and after the stable ones.
            String fresh = (random.nextBoolean() ? "a-" : "t-") + seed + "-" + inserted++;
            touched.add(fresh);
            write("Item", fresh);
          }
        } catch (Throwable failure) {
          failures.add(failure);
        }
      }));
    }
    try {
      while (middle.get() == 0) {
        Thread.sleep(5);
      }
      for (int traversal = 0; traversal < 4; traversal++) {
        List<String> listed = traverse("Item", 7, null);
        List<String> ordered = new ArrayList<>(new TreeSet<>(listed));
        assertEquals(ordered, listed, "pages in strict id order, no entity twice");
        assertTrue(listed.containsAll(stable), "every entity present throughout is listed");
      }
      // A page at a version while the churn goes on.
      List<String> atMiddleDuringChurn = traverse("Item", 9, middle.get());
      running.set(false);
      for (Thread churner : churners) {
        churner.join();
      }
      assertEquals(List.of(), failures);
      // The same version again, in other pages, after the churn: the same entities.
      List<String> atMiddle = traverse("Item", 50, middle.get());
      assertEquals(atMiddle, atMiddleDuringChurn);
      // Exactly what a read at that version finds, entity by entity.
      List<String> existedThen = new ArrayList<>();
      for (String id : new TreeSet<>(touched)) {
        Answer then = server.get("/v1/entities/Item/" + id + "?at=" + middle.get());
        assertTrue(then.status() == 200 || then.status() == 404, then.text());
        if (then.status() == 200) {
          existedThen.add(id);
        }
      }
      assertEquals(existedThen, atMiddle);
      // And the latest listing, now that nothing changes, is exactly the entities that exist.
      List<String> existNow = new ArrayList<>();
      for (String id : new TreeSet<>(touched)) {
        if (server.get("/v1/entities/Item/" + id).status() == 200) {
          existNow.add(id);
        }
      }
      assertEquals(existNow, traverse("Item", 13, null));
    } finally {
      running.set(false);
      for (Thread churner : churners) {
        churner.join();
      }
    }
  }

  @Test
  void versionsAreTheEntitiesVersionsAndADeletedThenRecreatedEntityIsRightAtEveryVersion()
      throws Exception {
    long created = write("Phoenix", "p");
    long other = write("Phoenix", "q");
    Answer deleted = server.send("DELETE", "/v1/entities/Phoenix/p", null);
    assertEquals(200, deleted.status(), deleted.text());
    long deletedAt = deleted.body().path("version").asLong();
    long recreated = write("Phoenix", "p");
    assertEquals(Map.of("p", created, "q", other), versionsAt("Phoenix", other));
    assertEquals(Map.of("q", other), versionsAt("Phoenix", deletedAt));
    assertEquals(Map.of("p", recreated, "q", other), versionsAt("Phoenix", recreated));
    assertEquals(Map.of(), versionsAt("Phoenix", 0), "version 0 is before every write");
    assertEquals(Map.of(), versionsAt("Phoenix", created - 1));
    Answer latest = server.get("/v1/entities/Phoenix");
    assertEquals(200, latest.status(), latest.text());
    assertEquals("Phoenix", latest.body().path("type").asText());
    assertEquals(recreated, latest.body().at("/entities/0/version").asLong());
    assertTrue(latest.body().path("next").isNull());
    // A type never written, declared or not: an empty page.
    Answer none = server.get("/v1/entities/Unwritten");
    assertEquals(200, none.status(), none.text());
    assertEquals(0, none.body().path("entities").size());
  }

  @Test
  void pagesPastManyDeletedEntitiesEndEarlyWithACursorAndLoseNothing() throws Exception {
    for (int i = 0; i < 130; i++) {
      String id = String.format("d-%03d", i);
      write("Sparse", id);
      assertEquals(200, server.send("DELETE", "/v1/entities/Sparse/" + id, null).status());
    }
    write("Sparse", "z-alive");
    write("Sparse", "a-alive");
    Answer first = server.get("/v1/entities/Sparse?limit=5");
    assertEquals(200, first.status(), first.text());
    // a-alive, then 59 deleted keys read: the page ends at max-examined (60) with a cursor.
    assertEquals(1, first.body().path("entities").size(), first.text());
    assertEquals("d-058", first.body().path("next").asText(), first.text());
    assertEquals(List.of("a-alive", "z-alive"), traverse("Sparse", 5, null));
    // The default limit is troupe.listing.default-limit (10).
    for (int i = 0; i < 12; i++) {
      write("Many", "m" + i);
    }
    Answer defaulted = server.get("/v1/entities/Many");
    assertEquals(10, defaulted.body().path("entities").size(), defaulted.text());
  }

  @Test
  void badCursorsLimitsAndVersionsAreRefusedWith400() throws Exception {
    write("Item", "s-000");
    for (String query : List.of("limit=0", "limit=-1", "limit=51", "limit=ten", "limit=",
        "limit=99999999999", "after=", "after=" + "i".repeat(300), "after=a%2Fb",
        "after=a%00b", "at=soon", "at=-1", "at=" + Long.MAX_VALUE)) {
      Answer refused = server.get("/v1/entities/Item?" + query);
      assertEquals(400, refused.status(), query + ": " + refused.text());
      assertEquals("invalid_request", refused.errorCode(), query);
    }
    Answer reserved = server.get("/v1/entities/" + URLEncoder.encode("$types",
        StandardCharsets.UTF_8));
    assertEquals(400, reserved.status(), reserved.text());
    Answer posted = server.send("POST", "/v1/entities/Item", "{}");
    assertEquals(405, posted.status(), posted.text());
  }

  /** Writes a register of the entity (creating it); answers the commit's version. */
  private static long write(String type, String id) throws Exception {
    Answer written = server.send("PUT", "/v1/entities/" + type + "/" + id + "/keys/n", "1");
    assertEquals(200, written.status(), written.text());
    return written.body().path("version").asLong();
  }

  private static Map<String, Long> versionsAt(String type, long version) throws Exception {
    Answer page = server.get("/v1/entities/" + type + "?at=" + version);
    assertEquals(200, page.status(), page.text());
    Map<String, Long> versions = new TreeMap<>();
    for (JsonNode entry : page.body().path("entities")) {
      versions.put(entry.path("id").asText(), entry.path("version").asLong());
    }
    return versions;
  }

  /** Every page of the type from the first, following {@code next}; the ids in page order. */
  private static List<String> traverse(String type, int limit, Long at) throws Exception {
    List<String> ids = new ArrayList<>();
    String after = null;
    for (int pages = 0; pages < 10_000; pages++) {
      String query = "?limit=" + limit + (at == null ? "" : "&at=" + at)
          + (after == null ? "" : "&after=" + URLEncoder.encode(after, StandardCharsets.UTF_8));
      Answer page = server.get("/v1/entities/" + type + query);
      assertEquals(200, page.status(), page.text());
      assertTrue(page.body().path("entities").size() <= limit, page.text());
      for (JsonNode entry : page.body().path("entities")) {
        ids.add(entry.path("id").asText());
      }
      if (page.body().path("next").isNull()) {
        return ids;
      }
      after = page.body().path("next").asText();
    }
    throw new AssertionError("paging " + type + " did not end");
  }
}
