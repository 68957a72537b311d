package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import picocli.CommandLine;

/**
 * {@code troupe bench marketplace} end to end, small: both contenders complete work and pass every
 * check; and each check catches a violation planted directly through the engine.
 */
class MarketplaceBenchmarkTest {
  @TempDir Path directory;

  @Test
  void bothContendersCompleteWorkAndPassEveryCheck() throws Exception {
    Path reportDirectory = directory.resolve("report");
    JsonNode report = BenchmarkRuns.run(directory, "marketplace", "--sellers", "3",
        "--products-per-seller", "8", "--customers", "30", "--actor-skew", "20", "--key-skew",
        "50", "--threads", "8", "--seconds", "1.5", "--warmup-seconds", "0.3", "--rounds", "1",
        "--idle-window-millis", "10", "--idle-max-wait-seconds", "0",
        "--report", reportDirectory.toString());
    for (String contender : TroupeMarketplace.CONTENDERS) {
      String system = "marketplace/" + contender;
      BenchmarkRuns.assertPositiveResults(report, system, "completed_per_second", "committed",
          "orders_checked", "AddItemToCart_p50_milliseconds", "DeleteItemInCart_p50_milliseconds",
          "UpdatePrice_p50_milliseconds", "Checkout_p50_milliseconds",
          "Checkout_p99_milliseconds");
      for (String check : MarketplaceChecks.NAMES) {
        assertEquals(0, report.path("results").path(system).path("violations_" + check)
            .asLong(-1), system + " " + check);
      }
    }
    assertTrue(report.path("ratios").has("declared / hand-coded, completed per second"),
        report.toString());
    assertEquals(1, report.path("ratio_spreads").path("declared / hand-coded, completed per second")
        .path("rounds").asInt(), report.toString());
    long goals = 0;
    for (JsonNode goal : report.path("goals")) {
      if (goal.path("name").asText().endsWith(" violations")) {
        assertEquals("PASS", goal.path("verdict").asText(), goal.toString());
        goals++;
      }
    }
    assertEquals(2 * MarketplaceChecks.NAMES.size(), goals);
    assertTrue(Files.size(reportDirectory.resolve("index.html")) > 0);
    assertTrue(Files.size(reportDirectory.resolve("latency-marketplace.png")) > 0);
  }

  @ParameterizedTest
  @ValueSource(strings = {TroupeMarketplace.DECLARED, TroupeMarketplace.HAND_CODED})
  void eachCheckCatchesAPlantedViolation(String contender) throws Exception {
    MarketplaceWorkload.Shape shape = new MarketplaceWorkload.Shape(2, 3, 4, 1, 1);
    try (TroupeMarketplace market = TroupeMarketplace.open(contender, shape, 100, 1, 4)) {
      MarketplaceWorkload.ProductSlot kept = new MarketplaceWorkload.ProductSlot(0, 1);
      MarketplaceWorkload.ProductSlot replaced = new MarketplaceWorkload.ProductSlot(1, 1);
      MarketplaceWorkload.ProductSlot sold = new MarketplaceWorkload.ProductSlot(0, 0);
      for (var transaction : List.<MarketplaceWorkload.Transaction>of(
          new MarketplaceWorkload.AddItemToCart(0, sold, 2),
          new MarketplaceWorkload.AddItemToCart(0, new MarketplaceWorkload.ProductSlot(1, 0), 1),
          new MarketplaceWorkload.AddItemToCart(1, kept, 1),
          new MarketplaceWorkload.AddItemToCart(2, replaced, 3),
          new MarketplaceWorkload.AddItemToCart(3, replaced, 1),
          new MarketplaceWorkload.Checkout(0, 1, List.of()),
          new MarketplaceWorkload.UpdatePrice(kept, 4321),
          new MarketplaceWorkload.AddItemToCart(3, kept, 2),
          new MarketplaceWorkload.DeleteProduct(replaced, 999, 50),
          new MarketplaceWorkload.AddItemToCart(2, sold, 1),
          new MarketplaceWorkload.Checkout(2, 1, List.of()))) {
        assertEquals(TroupeMarketplace.Outcome.COMMITTED, market.execute(transaction),
            transaction.toString());
      }
      String keptProduct = market.currentProduct(kept);
      String deletedProduct = TroupeMarketplace.productId(replaced, 0);
      assertEquals(1, market.generation(replaced));
      assertEquals(4321, market.readCart(1).get(keptProduct).price());
      assertEquals(4321, market.readCart(3).get(keptProduct).price());
      assertTrue(market.readCart(2).isEmpty() && market.readCart(0).isEmpty(),
          "checked out, and the deleted product left the carts");
      assertEquals(3, market.orders.size(), "one order per seller of each checkout");
      for (TroupeMarketplace.OrderRecord order : market.orders) {
        assertTrue(order.productVersions().size() >= 1,
            "the products take part in the checkout: " + order);
      }
      MarketplaceChecks.Violations clean = MarketplaceChecks.check(market);
      assertEquals(0, clean.total(), clean.toString());

      // Check 1: a cart item off its product's price, and an order line off the price then
      // (which also no longer adds up to the order's total).
      market.troupe.assign(TroupeMarketplace.cart(1), TroupeMarketplace.itemKey(keptProduct),
          LongNode.valueOf(4322)).join();
      EntityId order = market.orders.peek().order();
      ArrayNode lines = (ArrayNode) market.troupe.get(order).join().state().get("lines")
          .deepCopy();
      ObjectNode line = (ObjectNode) lines.get(0);
      line.put("price", line.get("price").asLong() + 1);
      market.troupe.assign(order, "lines", lines).join();
      // Check 2: a negative stock.
      market.troupe.assign(TroupeMarketplace.stock(market.currentProduct(
          new MarketplaceWorkload.ProductSlot(0, 2))), "available", LongNode.valueOf(-1)).join();
      // Check 3: the deleted product's stock, and a cart item of it, back.
      market.troupe.assign(TroupeMarketplace.stock(deletedProduct), "available",
          LongNode.valueOf(5)).join();
      market.troupe.assign(TroupeMarketplace.cart(2), TroupeMarketplace.itemKey(deletedProduct),
          LongNode.valueOf(123)).join();
      // Check 4: a dashboard off its orders.
      long revenue = market.troupe.getKey(TroupeMarketplace.seller(1), "revenue").join()
          .asLong();
      market.troupe.assign(TroupeMarketplace.seller(1), "revenue", LongNode.valueOf(revenue + 7))
          .join();

      MarketplaceChecks.Violations planted = MarketplaceChecks.check(market);
      assertEquals(3, planted.prices(), planted.toString());
      assertEquals(1, planted.stock(), planted.toString());
      assertEquals(2, planted.foreignKeys(), planted.toString());
      assertEquals(1, planted.dashboards(), planted.toString());
    }
  }

  @Test
  void refusesBadShapes() {
    CommandLine command = new CommandLine(new BenchCommand());
    assertNotEquals(0, command.execute("marketplace", "--actor-skew", "0"));
    assertNotEquals(0, command.execute("marketplace", "--customers", "0"));
    assertNotEquals(0, command.execute("marketplace", "--stock", "0"));
  }
}
