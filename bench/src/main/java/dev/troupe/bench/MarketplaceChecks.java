package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.EntityView;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;

/**
 * The marketplace's consistency, checked on a contender's engine after a run (nothing else may
 * run on it meanwhile). Each check counts violations; any violation fails the benchmark.
 *
 * <ol>
 *   <li><b>Prices</b>: every order line's price equals its product's price as its checkout saw it
 *       ({@code Troupe.readAt(product, version)} at the version of the product's commit in the
 *       checkout, see {@link #checkLines}), every order's total adds up its lines, and every cart
 *       item equals its product's current price.
 *   <li><b>Stock</b>: every listed product's stock is a number not below zero, and no checkout
 *       saw a negative stock after its commit.
 *   <li><b>Foreign keys</b>: no product, stock or cart item (price or quantity) of a deleted
 *       product is left.
 *   <li><b>Dashboards</b>: each seller's revenue and order count equal the sum of the totals and
 *       the number of that seller's committed orders.
 * </ol>
 */
final class MarketplaceChecks {
  /**
   * Violations found, per check, with the first few described.
   *
   * @param orderVersionMismatches not a violation: order lines whose product, read at the
   *     order's own commit version rather than at the product's commit in the same checkout, had
   *     another price (or none). The participants of one transaction commit with different
   *     timestamps, so another transaction that came after the checkout on the product can
   *     commit there with a timestamp below the order's.
   */
  record Violations(long prices, long stock, long foreignKeys, long dashboards,
      List<String> examples, long orderVersionMismatches, List<String> mismatchExamples) {
    long total() {
      return prices + stock + foreignKeys + dashboards;
    }
  }

  static final List<String> NAMES = List.of("prices", "stock", "foreign_keys", "dashboards");
  private static final int MAX_EXAMPLES = 10;
  /** Past-version reads in flight at once (the engine's materialization pool has 8 threads). */
  private static final int READS_IN_FLIGHT = 8;

  private final TroupeMarketplace market;
  private final LongAdder prices = new LongAdder();
  private final LongAdder stock = new LongAdder();
  private final LongAdder foreignKeys = new LongAdder();
  private final LongAdder dashboards = new LongAdder();
  private final List<String> examples = Collections.synchronizedList(new ArrayList<>());
  private final LongAdder orderVersionMismatches = new LongAdder();
  private final List<String> mismatchExamples = new ArrayList<>();

  private MarketplaceChecks(TroupeMarketplace market) {
    this.market = market;
  }

  /** Runs every check on the contender's engine. */
  static Violations check(TroupeMarketplace market) throws InterruptedException {
    return new MarketplaceChecks(market).run();
  }

  private Violations run() throws InterruptedException {
    Map<Integer, long[]> bySeller = checkOrders();
    checkDashboards(bySeller);
    checkCarts();
    checkCatalog();
    stock.add(market.negativeStockSeen.sum());
    if (market.negativeStockSeen.sum() > 0) {
      example(stock, market.negativeStockSeen.sum() + " checkouts saw a negative stock");
    }
    return new Violations(prices.sum(), stock.sum(), foreignKeys.sum(), dashboards.sum(),
        List.copyOf(examples), orderVersionMismatches.sum(), List.copyOf(mismatchExamples));
  }

  /** Check 1 on orders; returns per seller the sum of totals and the count of orders. */
  private Map<Integer, long[]> checkOrders() throws InterruptedException {
    List<TroupeMarketplace.OrderRecord> orders = new ArrayList<>(market.orders);
    Map<Integer, long[]> bySeller = new ConcurrentHashMap<>();
    try (var progress = ProgressBars.start("check " + market.name + " orders", orders.size(),
        "orders", 1)) {
      BoundedSubmission.run(orders.size(), READS_IN_FLIGHT, progress, index -> {
        TroupeMarketplace.OrderRecord record = orders.get(index);
        return market.troupe.get(record.order()).handle((view, failure) -> {
          if (failure != null) {
            if (notFound(failure)) {
              example(dashboards, record.order() + " committed but does not exist");
              return CompletableFuture.completedFuture(null);
            }
            throw new CompletionException(failure);
          }
          JsonNode state = view.state();
          long[] sums = bySeller.computeIfAbsent(record.seller(), ignored -> new long[2]);
          synchronized (sums) {
            sums[0] += state.path("total").asLong();
            sums[1] += 1;
          }
          return checkLines(record, view);
        }).thenCompose(lines -> lines == null ? CompletableFuture.completedFuture(null) : lines);
      });
    }
    return bySeller;
  }

  /**
   * Every line's price against its product's price as the checkout saw it: at the commit version
   * of the product's part in the checkout (the product takes part in every checkout of it, as a
   * participant of the hand-coded transaction or through the dependencies the declared one
   * deregisters), else at the order's commit version. Also reads each product at the order's
   * commit version, which the engine gives its own timestamp, and counts lines that differ there
   * (see {@link Violations#orderVersionMismatches}).
   */
  private CompletableFuture<Void> checkLines(TroupeMarketplace.OrderRecord record,
      EntityView view) {
    EntityId order = record.order();
    List<CompletableFuture<?>> reads = new ArrayList<>();
    long total = 0;
    for (JsonNode line : view.state().path("lines")) {
      String product = line.path("product").asText();
      long price = line.path("price").asLong();
      total += price * line.path("quantity").asLong();
      Long partVersion = record.productVersions().get(product);
      long version = partVersion == null ? view.version() : partVersion;
      reads.add(market.troupe.readAt(TroupeMarketplace.product(product), version)
          .handle((then, failure) -> {
            JsonNode priceThen = priceThen(then, failure);
            if (priceThen == null || !priceThen.isNumber() || priceThen.asLong() != price) {
              example(prices, order + " charged " + price + " for " + product + ", whose price"
                  + " at its commit in the checkout (" + version + ") was " + priceThen);
            }
            return null;
          }));
      if (partVersion != null && partVersion != view.version()) {
        reads.add(market.troupe.readAt(TroupeMarketplace.product(product), view.version())
            .handle((then, failure) -> {
              JsonNode priceThen = priceThen(then, failure);
              if (priceThen == null || !priceThen.isNumber() || priceThen.asLong() != price) {
                orderVersionMismatches.increment();
                synchronized (mismatchExamples) {
                  if (mismatchExamples.size() < MAX_EXAMPLES) {
                    mismatchExamples.add(market.name + ": " + order + " (committed at "
                        + view.version() + ") charged " + price + " for " + product + ", its"
                        + " price at the product's commit in the checkout (" + partVersion
                        + "); read at " + view.version() + " the product has " + priceThen);
                  }
                }
              }
              return null;
            }));
      }
    }
    if (total != view.state().path("total").asLong()) {
      example(prices, order + " has a total of " + view.state().path("total")
          + " but its lines add up to " + total);
    }
    return CompletableFuture.allOf(reads.toArray(CompletableFuture[]::new));
  }

  /** The price in a past-version read; null when the product did not exist then. */
  private static JsonNode priceThen(EntityView then, Throwable failure) {
    if (failure != null) {
      if (notFound(failure)) {
        return null;
      }
      throw new CompletionException(failure);
    }
    return then.state().path("price");
  }

  /** Check 4. */
  private void checkDashboards(Map<Integer, long[]> bySeller) {
    for (int seller = 0; seller < market.shape.sellers(); seller++) {
      JsonNode state = market.troupe.get(TroupeMarketplace.seller(seller)).join().state();
      long[] sums = bySeller.getOrDefault(seller, new long[2]);
      long revenue = state.path("revenue").asLong();
      long orders = state.path("orders").asLong();
      if (revenue != sums[0] || orders != sums[1]) {
        example(dashboards, "seller s" + seller + " shows revenue " + revenue + " over " + orders
            + " orders, but its orders add up to " + sums[0] + " over " + sums[1]);
      }
    }
  }

  /** Check 1 on carts (each item at its product's current price) and check 3 on carts. */
  private void checkCarts() {
    for (int customer = 0; customer < market.shape.customers(); customer++) {
      EntityId cart = TroupeMarketplace.cart(customer);
      JsonNode state = market.troupe.get(cart).join().state();
      SortedMap<String, TroupeMarketplace.Item> items = TroupeMarketplace.cartItems(state);
      state.path("qty").fieldNames().forEachRemaining(product -> {
        if (!items.containsKey(product)) {
          example(foreignKeys, cart + " keeps a quantity of " + product + " without its item");
        }
      });
      items.forEach((product, item) -> {
        if (!isListed(product)) {
          example(foreignKeys, cart + " holds " + product + ", which was deleted");
          return;
        }
        JsonNode price = market.keyOrNull(TroupeMarketplace.product(product), "price");
        if (price == null || price.asLong() != item.price()) {
          example(prices, cart + " holds " + product + " at " + item.price() + " but its price"
              + " is " + price);
        }
      });
    }
  }

  /** Check 2 on every listed product's stock; check 3 on every deleted generation. */
  private void checkCatalog() {
    for (int slotIndex = 0; slotIndex < market.shape.products(); slotIndex++) {
      MarketplaceWorkload.ProductSlot slot = market.slot(slotIndex);
      int current = market.generation(slot);
      String listed = TroupeMarketplace.productId(slot, current);
      JsonNode available = market.keyOrNull(TroupeMarketplace.stock(listed), "available");
      if (available == null || !available.isNumber() || available.asLong() < 0) {
        example(stock, listed + " has a stock of " + available);
      }
      for (int generation = 0; generation < current; generation++) {
        String deleted = TroupeMarketplace.productId(slot, generation);
        if (market.keyOrNull(TroupeMarketplace.product(deleted), "price") != null) {
          example(foreignKeys, deleted + " was deleted but still has a price");
        }
        if (market.keyOrNull(TroupeMarketplace.stock(deleted), "available") != null) {
          example(foreignKeys, deleted + " was deleted but its stock is left");
        }
      }
    }
  }

  private boolean isListed(String product) {
    return market.generation(TroupeMarketplace.slotOf(product))
        == TroupeMarketplace.generationOf(product);
  }

  private void example(LongAdder check, String description) {
    check.increment();
    synchronized (examples) {
      if (examples.size() < MAX_EXAMPLES) {
        examples.add(market.name + ": " + description);
      }
    }
  }

  private static boolean notFound(Throwable failure) {
    Throwable cause = failure instanceof CompletionException && failure.getCause() != null
        ? failure.getCause() : failure;
    return cause instanceof TroupeException error && error.code() == ErrorCode.NOT_FOUND;
  }
}
