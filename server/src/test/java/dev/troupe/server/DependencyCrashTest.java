package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.server.ServerProcess.Answer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Declared dependencies survive {@code kill -9}: carts replicate product prices through a
 * dependency their type declares ({@code item[p]} follows {@code Product/{p}.price}), while
 * clients change prices (each client owns one product and writes increasing prices), remove cart
 * items (deregistering) and put them back (registering again), and the server is killed at random
 * moments 6 times. After every restart:
 *
 * <ul>
 *   <li>no acknowledged price is lost: each product's price is at least its client's last
 *       acknowledged one;
 *   <li>every cart item equals its product's price: a price change and its forwards to every cart
 *       committed together or not at all, acknowledged or not, and no registration or
 *       deregistration was half applied (a dependency known to the cart but not the product
 *       would leave a stale item behind the next price change, checked one change later).
 * </ul>
 */
class DependencyCrashTest {
  private static final int CYCLES = 6;
  private static final int PRODUCTS = 4;
  private static final int CARTS = 6;

  @TempDir Path data;

  private static final String TYPES = """
      type: Cart
      admission: keys
      keys:
        item: {kind: register, family: true}
      dependencies:
        - {follower: "item[p]", kind: update, leader: {entity: "Product/{p}", key: price},
           function: replicate}
      """;

  @Test
  void forwardsAreAtomicWithTheirLeaderAndDurableAcrossKillNine() throws Exception {
    long seed = Long.getLong("troupe.test.seed", System.nanoTime());
    System.out.println("DependencyCrashTest seed " + seed
        + " (rerun with -Dtroupe.test.seed=" + seed + ")");
    Random random = new Random(seed);
    Path directory = data.resolve("node");
    String[] settings = {
      "troupe.storage.partitions=4",
      "troupe.storage.checkpoint-every-operations=50",
      "troupe.storage.checkpoint-interval-millis=200",
      "troupe.storage.history-retention-millis=100"
    };
    Map<Integer, AtomicLong> acknowledgedPrice = new ConcurrentHashMap<>();
    AtomicLong acknowledgedWrites = new AtomicLong();
    ServerProcess first = ServerProcess.start(directory, settings);
    try {
      Answer defined = first.send("PUT", "/v1/types/Cart", TYPES, "application/yaml");
      assertEquals(200, defined.status(), defined.text());
      for (int p = 0; p < PRODUCTS; p++) {
        assertEquals(200, first.send("PUT", "/v1/entities/Product/p" + p + "/keys/price", "0")
            .status());
        acknowledgedPrice.put(p, new AtomicLong(0));
      }
      for (int c = 0; c < CARTS; c++) {
        for (int p = 0; p < PRODUCTS; p++) {
          Answer added = first.send("PUT", "/v1/entities/Cart/c" + c + "/keys/" + item(p), "-1");
          assertEquals(200, added.status(), added.text());
        }
      }
    } finally {
      first.close();
    }
    long nextPrice = 1;
    for (int cycle = 0; cycle <= CYCLES; cycle++) {
      ServerProcess server = ServerProcess.start(directory, settings);
      try {
        verify(server, cycle, acknowledgedPrice);
        if (cycle == CYCLES) {
          server.close(); // the last incarnation, verified: not left running after the test
          break;
        }
        AtomicBoolean running = new AtomicBoolean(true);
        List<Thread> clients = new ArrayList<>();
        for (int p = 0; p < PRODUCTS; p++) {
          int product = p;
          long start = nextPrice + p * 1_000_000L;
          Random clientRandom = new Random(random.nextLong());
          Thread thread = new Thread(() -> client(server, product, start, clientRandom, running,
              acknowledgedPrice.get(product), acknowledgedWrites));
          thread.setDaemon(true);
          thread.start();
          clients.add(thread);
        }
        nextPrice += 10_000_000L;
        Thread.sleep(400 + random.nextInt(1200));
        server.kill();
        running.set(false);
        for (Thread thread : clients) {
          thread.join(10_000);
        }
      } catch (Throwable failure) {
        System.out.println("server log of the failing cycle " + cycle + ":\n" + server.log());
        server.kill();
        throw failure;
      }
    }
    System.out.println("acknowledged writes " + acknowledgedWrites.get());
    assertTrue(acknowledgedWrites.get() > 100, "too little work: " + acknowledgedWrites.get());
  }

  private static String item(int product) {
    return "item%5Bp" + product + "%5D";
  }

  /**
   * Raises its product's price; now and then takes its item out of a cart or puts it back (only
   * this client touches its product's items, so it knows which carts hold one: putting one back
   * is its registration, never an overwrite of a replicated price).
   */
  private static void client(ServerProcess server, int product, long start, Random random,
      AtomicBoolean running, AtomicLong acknowledged, AtomicLong acknowledgedWrites) {
    long price = start;
    boolean[] held = new boolean[CARTS];
    try {
      for (int c = 0; c < CARTS; c++) {
        held[c] = !server.get("/v1/entities/Cart/c" + c).body().at("/state/item/p" + product)
            .isMissingNode();
      }
    } catch (Exception killed) {
      return;
    }
    while (running.get()) {
      try {
        if (random.nextInt(4) == 0) {
          int cart = random.nextInt(CARTS);
          String cartItem = "/v1/entities/Cart/c" + cart + "/keys/" + item(product);
          Answer answer = held[cart]
              ? server.send("DELETE", cartItem, null)
              : server.send("PUT", cartItem, "-1");
          if (answer.status() == 200) {
            held[cart] = !held[cart];
            acknowledgedWrites.incrementAndGet();
          } else {
            return; // not expected without a crash; the verification will say what happened
          }
          continue;
        }
        price++;
        Answer answer = server.send("PUT", "/v1/entities/Product/p" + product + "/keys/price",
            Long.toString(price));
        if (answer.status() == 200) {
          acknowledged.set(price);
          acknowledgedWrites.incrementAndGet();
        }
      } catch (Exception killed) {
        return;
      }
    }
  }

  private static void verify(ServerProcess server, int cycle,
      Map<Integer, AtomicLong> acknowledgedPrice) throws Exception {
    long[] prices = new long[PRODUCTS];
    for (int p = 0; p < PRODUCTS; p++) {
      Answer product = server.get("/v1/entities/Product/p" + p);
      assertEquals(200, product.status(), product.text());
      prices[p] = product.body().at("/state/price").asLong();
      assertTrue(prices[p] >= acknowledgedPrice.get(p).get(), "cycle " + cycle + ": product p"
          + p + " lost an acknowledged price: " + prices[p] + " < "
          + acknowledgedPrice.get(p).get());
    }
    for (int c = 0; c < CARTS; c++) {
      Answer cart = server.get("/v1/entities/Cart/c" + c);
      assertEquals(200, cart.status(), cart.text());
      JsonNode items = cart.body().at("/state/item");
      for (int p = 0; p < PRODUCTS; p++) {
        JsonNode item = items.get("p" + p);
        if (item != null) {
          assertEquals(prices[p], item.asLong(), "cycle " + cycle + ": cart c" + c
              + " holds a price of p" + p + " that is not the product's");
        }
      }
    }
    // One more change of every price after the restart reaches every cart item left: the
    // dependency records on both ends survived together.
    for (int p = 0; p < PRODUCTS; p++) {
      long changed = prices[p] + 1;
      Answer answer = server.send("PUT", "/v1/entities/Product/p" + p + "/keys/price",
          Long.toString(changed));
      assertEquals(200, answer.status(), answer.text());
      acknowledgedPrice.get(p).set(changed);
      for (int c = 0; c < CARTS; c++) {
        JsonNode item = server.get("/v1/entities/Cart/c" + c).body().at("/state/item/p" + p);
        if (!item.isMissingNode()) {
          assertEquals(changed, item.asLong(), "cycle " + cycle + ": cart c" + c
              + " no longer follows p" + p + " though it holds it");
        }
      }
    }
  }
}
