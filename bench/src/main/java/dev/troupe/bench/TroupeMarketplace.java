package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import com.typesafe.config.ConfigFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TransactionAbort;
import dev.troupe.model.TroupeException;
import dev.troupe.model.spec.ActionSpec;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.TransactionOutcome;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Online Marketplace (smsa.txt §4.6, Fig. 13) on an embedded Troupe engine, every type with
 * key-level admission ({@code keys}). Subclasses keep the cross-entity consistency in two ways:
 * {@link DeclaredMarketplace} declares it as dependencies, {@link HandCodedMarketplace} maintains
 * it in application transactions.
 *
 * <p><b>Entities</b> (one engine, its own data, per contender):
 *
 * <ul>
 *   <li>{@code Seller/s<i>}: the seller's dashboard, {@code revenue} and {@code orders}.
 *   <li>{@code Product/<id>} ({@code price}) and {@code Stock/<id>} ({@code available}) per
 *       product; {@code <id>} is {@code s<seller>-p<index>-g<generation>}: a deleted product is
 *       replaced by the next generation of its slot, so ids are never reused.
 *   <li>{@code Customer/c<i>} ({@code checkouts}, {@code spent}) and {@code Cart/c<i>}: the cart's
 *       items are members of two key families, {@code item[<product>]} (the price, a replica of the
 *       product's) and {@code qty[<product>]} (units).
 *   <li>Per checkout {@code k<n>}: {@code Order/k<n>-s<seller>} per seller of the items bought
 *       ({@code lines}, {@code total}, {@code customer}, {@code seller}), {@code Payment/k<n>} and
 *       {@code Shipment/k<n>}.
 * </ul>
 *
 * <p><b>Shared by both</b>: a transaction that depends on what it reads reads the latest committed
 * state (no locks), then runs a static transaction whose preconditions compare with what it read
 * (compare-and-set) and reads again and retries, up to {@link #MAX_ATTEMPTS} attempts, when they
 * fail (optimistic concurrency control, as {@link TroupeSmallBank}'s Amalgamate). Checkout reads
 * the cart, tops it up with the workload's adds when it holds fewer items than asked, and then in
 * one transaction checks every item against what it read (cart price and quantity), takes the
 * stock ({@code available >= qty}), empties those items, and writes the orders, the payment, the
 * shipment and the customer. A stock too low, a product gone, an empty cart are the
 * application's verdict (rejected); the engine giving up on a lock conflict or the retries running
 * out is an abort.
 *
 * <p>Runtime settings (the same for both, {@link #settings}): history kept for a day, so that the
 * checks can read every product as of every order; and the limits on participants, operations,
 * keys per entity and dependencies per key raised so that no transaction of the workload hits
 * them.
 *
 * <p>Thread-safe.
 */
abstract class TroupeMarketplace implements AutoCloseable {
  /** Attempts of a transaction whose compare-and-set keeps failing before it counts as aborted. */
  static final int MAX_ATTEMPTS = 50;
  /** Old versions stay readable this long, so the checks can read products as of every order. */
  static final long HISTORY_RETENTION_MILLIS = 24L * 3600 * 1000;
  /**
   * Dependencies one key may lead or follow: a seller's dashboard follows every order of the
   * seller, which outgrows the default of 10,000 within one run.
   */
  static final int MAX_DEPENDENCIES_PER_KEY = 100_000_000;

  static final String DECLARED = "declared";
  static final String HAND_CODED = "hand-coded";
  static final List<String> CONTENDERS = List.of(DECLARED, HAND_CODED);

  /** A transaction's end, as the benchmark counts it. */
  enum Outcome {
    COMMITTED,
    /** The application's own verdict: out of stock, product gone, nothing in the cart. */
    REJECTED,
    /** The engine gave up on a conflict, or the compare-and-set retries ran out. */
    ABORTED
  }

  /**
   * A committed order: its entity and seller (the checks read the rest from the engine), and the
   * commit version of each product that took part in its checkout (the product's state right
   * after the checkout's part there: what the checkout saw of it).
   */
  record OrderRecord(EntityId order, int seller, Map<String, Long> productVersions) {}

  /** A cart item as read: its price and units. */
  record Item(long price, long quantity) {}

  private static final Pattern PRODUCT_ID = Pattern.compile("s(\\d+)-p(\\d+)-g(\\d+)");

  /** The types every contender has; Product and Cart are the contender's own. */
  static final String COMMON_SPECS = """
      type: Seller
      admission: keys
      keys:
        name: {kind: register}
        revenue: {kind: register, default: 0}
        orders: {kind: register, default: 0}
      actions:
        recordOrder:
          params: {total: int}
          effect: {revenue: "revenue + total", orders: "orders + 1"}
      ---
      type: Stock
      admission: keys
      keys:
        available: {kind: register}
      actions:
        take:
          params: {quantity: int}
          pre: ["available >= quantity"]
          effect: {available: "available - quantity"}
        requireStocked:
          pre: ["available != null"]
      ---
      type: Customer
      admission: keys
      keys:
        name: {kind: register}
        checkouts: {kind: register, default: 0}
        spent: {kind: register, default: 0}
      actions:
        checkedOut:
          params: {amount: int}
          effect: {checkouts: "checkouts + 1", spent: "spent + amount"}
      ---
      type: Order
      admission: keys
      keys:
        customer: {kind: register}
        seller: {kind: register}
        lines: {kind: register}
        total: {kind: register}
      ---
      type: Payment
      admission: keys
      keys:
        customer: {kind: register}
        amount: {kind: register}
        orders: {kind: register}
      ---
      type: Shipment
      admission: keys
      keys:
        customer: {kind: register}
        orders: {kind: register}
        status: {kind: register}
      """;

  /** Cart actions both contenders use. */
  static final String CART_COMMON_ACTIONS = """
        addQuantity:
          params: {product: string, quantity: int}
          members: {held: "item[product]", units: "qty[product]"}
          pre: ["held != null"]
          effect: {units: "units + quantity"}
        requireItem:
          params: {product: string}
          members: {held: "item[product]"}
          pre: ["held != null"]
        checkItem:
          params: {product: string, priceSeen: int, quantitySeen: int}
          members: {held: "item[product]", units: "qty[product]"}
          pre: ["held == priceSeen", "units == quantitySeen"]
      """;

  final String name;
  final MarketplaceWorkload.Shape shape;
  final Troupe troupe;
  private final TemporaryDirectory directory;
  /** Per product slot, the generation currently listed. */
  private final AtomicIntegerArray generations;
  private final AtomicLong checkoutIds = new AtomicLong();
  /** Every order committed, for the checks. */
  final ConcurrentLinkedQueue<OrderRecord> orders = new ConcurrentLinkedQueue<>();
  /** Checkouts whose committed stock was below zero (must stay 0). */
  final LongAdder negativeStockSeen = new LongAdder();
  /** Compare-and-set failures retried by the application (not the engine's wait-die retries). */
  final LongAdder applicationRetries = new LongAdder();

  TroupeMarketplace(String name, MarketplaceWorkload.Shape shape, TemporaryDirectory directory,
      Troupe troupe) {
    this.name = name;
    this.shape = shape;
    this.directory = directory;
    this.troupe = troupe;
    this.generations = new AtomicIntegerArray(shape.products());
  }

  /**
   * Opens a fresh engine for contender {@code contender} ({@link #DECLARED} or {@link
   * #HAND_CODED}), defines the types and lists every seller, product (with {@code stock} units)
   * and customer.
   */
  static TroupeMarketplace open(String contender, MarketplaceWorkload.Shape shape, long stock,
      long seed, int concurrency) throws Exception {
    TemporaryDirectory directory = TemporaryDirectory.create("marketplace-" + contender);
    Troupe troupe = null;
    try {
      troupe = Troupe.open(settings(directory.resolve("data"), shape));
      TroupeMarketplace market = switch (contender) {
        case DECLARED -> new DeclaredMarketplace(shape, directory, troupe);
        case HAND_CODED -> new HandCodedMarketplace(shape, directory, troupe);
        default -> throw new IllegalArgumentException("unknown contender '" + contender
            + "'; use " + String.join(", ", CONTENDERS));
      };
      market.defineTypes();
      market.load(stock, seed, concurrency);
      return market;
    } catch (Exception | Error e) {
      if (troupe != null) {
        troupe.close();
      }
      directory.close();
      throw e;
    }
  }

  /**
   * Default settings but for what the workload needs: history kept for the checks, and limits
   * that a product held by every cart (hand-coded UpdatePrice and DeleteProduct touch every cart
   * of the product; the declared ones forward to every one) and a dashboard following every order
   * do not hit. The same for both contenders.
   */
  static RuntimeSettings settings(Path data, MarketplaceWorkload.Shape shape) {
    int participants = Math.max(64, shape.customers() + 64);
    return RuntimeSettings.fromConfig(ConfigFactory.parseMap(Map.of(
            "troupe.data-directory", data.toString(),
            "troupe.storage.history-retention-millis", HISTORY_RETENTION_MILLIS,
            "troupe.transactions.max-participants", participants,
            "troupe.transactions.max-operations", Math.max(256, 2 * participants + 64),
            "troupe.limits.max-keys-per-entity", Math.max(1024, shape.customers() + 64),
            "troupe.dependencies.max-per-key", MAX_DEPENDENCIES_PER_KEY,
            "troupe.dependencies.max-participants", Math.max(4096, participants)))
        .withFallback(ConfigFactory.load()));
  }

  /** The contender's Product and Cart types, YAML documents separated by {@code ---}. */
  abstract String productAndCartSpecs();

  /**
   * Lists product {@code product} of {@code seller} with its price and stock, in one transaction
   * (at setup and when DeleteProduct lists the next generation).
   */
  abstract List<TransactionRequest.Operation> listProduct(String product, int seller, long price,
      long stock);

  abstract Outcome addItem(MarketplaceWorkload.AddItemToCart add);

  abstract Outcome deleteItem(MarketplaceWorkload.DeleteItemInCart delete);

  abstract Outcome updatePrice(MarketplaceWorkload.UpdatePrice update);

  abstract Outcome deleteProduct(MarketplaceWorkload.DeleteProduct delete);

  /**
   * The contender's part of a checkout besides the cart, stock, order, payment, shipment and
   * customer operations every contender has: operations on the products of {@code items}.
   */
  abstract List<TransactionRequest.Operation> checkoutProductOperations(int customer,
      SortedMap<String, Item> items);

  /** The contender's operations that make {@code order} count on its seller's dashboard. */
  abstract List<TransactionRequest.Operation> checkoutOrderOperations(EntityId order, int seller,
      long total);

  /** How the checkout transaction is scheduled. */
  abstract TransactionRequest.Mode checkoutMode();

  private void defineTypes() {
    String all = COMMON_SPECS + "---\n" + productAndCartSpecs();
    for (String document : all.split("(?m)^---\\s*$")) {
      String text = document.strip();
      Matcher type = Pattern.compile("(?m)^type:\\s*(\\S+)").matcher(text);
      if (!type.find()) {
        throw new IllegalStateException("a spec without a type: " + text);
      }
      troupe.defineType(SpecParser.parse(type.group(1), text.getBytes(StandardCharsets.UTF_8),
          true)).join();
    }
  }

  private void load(long stock, long seed, int concurrency) throws InterruptedException {
    int sellers = shape.sellers();
    int customers = shape.customers();
    int products = shape.products();
    try (var progress = ProgressBars.start("load " + name, sellers + customers + products,
        "entities", 1)) {
      BoundedSubmission.run(sellers + customers + products, concurrency, progress, index -> {
        if (index < sellers) {
          return troupe.assign(seller(index), "name", TextNode.valueOf("seller " + index));
        }
        if (index < sellers + customers) {
          int customer = index - sellers;
          return troupe.assign(customer(customer), "name", TextNode.valueOf("c" + customer))
              .thenCompose(ignored ->
                  troupe.assign(cart(customer), "owner", TextNode.valueOf("c" + customer)));
        }
        int slot = index - sellers - customers;
        MarketplaceWorkload.ProductSlot product = slot(slot);
        return troupe.transact(new TransactionRequest(listProduct(productId(product, 0),
            product.seller(), MarketplaceWorkload.initialPrice(seed, slot), stock), List.of(),
            TransactionRequest.Mode.DYNAMIC));
      });
    }
  }

  /** Runs one transaction of the workload. */
  Outcome execute(MarketplaceWorkload.Transaction transaction) {
    try {
      return switch (transaction) {
        case MarketplaceWorkload.AddItemToCart add -> addItem(add);
        case MarketplaceWorkload.DeleteItemInCart delete -> deleteItem(delete);
        case MarketplaceWorkload.UpdatePrice update -> updatePrice(update);
        case MarketplaceWorkload.Checkout checkout -> checkout(checkout);
        case MarketplaceWorkload.SellerDashboard dashboard -> {
          JsonNode state = troupe.get(seller(dashboard.seller())).join().state();
          // One committed state: revenue and order count agree with each other.
          if (!state.path("revenue").isNumber() || !state.path("orders").isNumber()) {
            throw new IllegalStateException("a dashboard without figures: " + state);
          }
          yield Outcome.COMMITTED;
        }
        case MarketplaceWorkload.DeleteProduct delete -> deleteProduct(delete);
      };
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException error && error.code() == ErrorCode.ABORTED) {
        return Outcome.ABORTED; // lock conflicts past the engine's retries, a timeout
      }
      throw e; // unavailable, outcome_unknown, invalid: the run is broken
    }
  }

  private Outcome checkout(MarketplaceWorkload.Checkout checkout) {
    int customer = checkout.customer();
    SortedMap<String, Item> items = readCart(customer);
    Iterator<MarketplaceWorkload.AddItemToCart> topUps = checkout.topUps().iterator();
    while (items.size() < checkout.items() && topUps.hasNext()) {
      addItem(topUps.next());
      items = readCart(customer);
    }
    for (int attempt = 1; ; attempt++) {
      if (items.isEmpty()) {
        return Outcome.REJECTED;
      }
      String checkoutId = "k" + checkoutIds.incrementAndGet();
      EntityId cart = cart(customer);
      List<TransactionRequest.Operation> operations = new ArrayList<>();
      Map<Integer, ArrayNode> linesBySeller = new TreeMap<>();
      Map<Integer, Long> totalBySeller = new TreeMap<>();
      long amount = 0;
      for (Map.Entry<String, Item> entry : items.entrySet()) {
        String product = entry.getKey();
        Item item = entry.getValue();
        ObjectNode check = productParams(product);
        check.put("priceSeen", item.price());
        check.put("quantitySeen", item.quantity());
        operations.add(new TransactionRequest.Operation(cart,
            new Turn.InvokeAction("checkItem", check)));
        operations.add(new TransactionRequest.Operation(cart, new Turn.DeleteKey(itemKey(product))));
        operations.add(new TransactionRequest.Operation(cart,
            new Turn.DeleteKey(quantityKey(product))));
        ObjectNode take = Json.NODES.objectNode();
        take.put("quantity", item.quantity());
        operations.add(new TransactionRequest.Operation(stock(product),
            new Turn.InvokeAction("take", take)));
        int seller = sellerOf(product);
        ObjectNode line = linesBySeller.computeIfAbsent(seller, ignored ->
            Json.NODES.arrayNode()).addObject();
        line.put("product", product);
        line.put("price", item.price());
        line.put("quantity", item.quantity());
        totalBySeller.merge(seller, item.price() * item.quantity(), Long::sum);
        amount += item.price() * item.quantity();
      }
      operations.addAll(checkoutProductOperations(customer, items));
      ArrayNode orderIds = Json.NODES.arrayNode();
      Map<EntityId, Integer> created = new LinkedHashMap<>();
      for (Map.Entry<Integer, ArrayNode> sellerLines : linesBySeller.entrySet()) {
        int seller = sellerLines.getKey();
        long total = totalBySeller.get(seller);
        EntityId order = new EntityId("Order", checkoutId + "-s" + seller);
        orderIds.add(order.id());
        created.put(order, seller);
        operations.add(new TransactionRequest.Operation(order, new Turn.AssignKeys(Map.of(
            "customer", TextNode.valueOf("c" + customer),
            "seller", TextNode.valueOf("s" + seller),
            "lines", sellerLines.getValue(),
            "total", LongNode.valueOf(total)))));
        operations.addAll(checkoutOrderOperations(order, seller, total));
      }
      operations.add(new TransactionRequest.Operation(new EntityId("Payment", checkoutId),
          new Turn.AssignKeys(Map.of("customer", TextNode.valueOf("c" + customer),
              "amount", LongNode.valueOf(amount), "orders", orderIds))));
      operations.add(new TransactionRequest.Operation(new EntityId("Shipment", checkoutId),
          new Turn.AssignKeys(Map.of("customer", TextNode.valueOf("c" + customer),
              "orders", orderIds, "status", TextNode.valueOf("pending")))));
      ObjectNode paid = Json.NODES.objectNode();
      paid.put("amount", amount);
      operations.add(new TransactionRequest.Operation(customer(customer),
          new Turn.InvokeAction("checkedOut", paid)));
      TransactionOutcome outcome = transact(operations, checkoutMode());
      if (outcome != null) {
        Map<String, Long> productVersions = new TreeMap<>();
        for (TransactionOutcome.EntityOutcome part : outcome.entities()) {
          if (part.entity().type().equals("Product")) {
            productVersions.put(part.entity().id(), part.version());
          }
        }
        created.forEach((order, seller) -> orders.add(
            new OrderRecord(order, seller, Map.copyOf(productVersions))));
        for (TransactionOutcome.EntityOutcome part : outcome.entities()) {
          if (part.entity().type().equals("Stock") && part.wrote()) {
            JsonNode available = part.state().path("available");
            if (!available.isNumber() || available.asLong() < 0) {
              negativeStockSeen.increment();
            }
          }
        }
        return Outcome.COMMITTED;
      }
      // A precondition failed: out of stock, or the cart changed since it was read.
      items = readCart(customer);
      if (outOfStock(items)) {
        return Outcome.REJECTED;
      }
      if (attempt == MAX_ATTEMPTS) {
        return Outcome.ABORTED;
      }
      applicationRetries.increment();
    }
  }

  /** Whether some item's stock is below its quantity (or gone with its product). */
  private boolean outOfStock(SortedMap<String, Item> items) {
    for (Map.Entry<String, Item> entry : items.entrySet()) {
      JsonNode available = keyOrNull(stock(entry.getKey()), "available");
      if (available == null || !available.isNumber()
          || available.asLong() < entry.getValue().quantity()) {
        return true;
      }
    }
    return false;
  }

  // ------------------------------------------------------------------ helpers for contenders

  /**
   * Runs a static transaction; null when a precondition refused it (the caller reads again or
   * gives up). Other failures propagate.
   */
  final TransactionOutcome transact(List<TransactionRequest.Operation> operations,
      TransactionRequest.Mode mode) {
    try {
      return troupe.transact(new TransactionRequest(operations, List.of(), mode)).join();
    } catch (CompletionException e) {
      if (refusedByPrecondition(e)) {
        return null;
      }
      throw e;
    }
  }

  /** Invokes a single-entity action; false when its precondition refused it. */
  final boolean invoke(EntityId entity, String action, JsonNode params) {
    try {
      troupe.invoke(entity, action, params).join();
      return true;
    } catch (CompletionException e) {
      if (refusedByPrecondition(e)) {
        return false;
      }
      throw e;
    }
  }

  static boolean refusedByPrecondition(CompletionException e) {
    return e.getCause() instanceof TroupeException error
        && (error.code() == ErrorCode.PRECONDITION_FAILED
            || error.code() == ErrorCode.ABORTED
                && TransactionAbort.PRECONDITION_FAILED.equals(error.reason()));
  }

  /** The customer's cart items as committed: product to price and units. */
  SortedMap<String, Item> readCart(int customer) {
    return cartItems(troupe.get(cart(customer)).join().state());
  }

  static SortedMap<String, Item> cartItems(JsonNode cartState) {
    SortedMap<String, Item> items = new TreeMap<>();
    JsonNode prices = cartState.path("item");
    JsonNode quantities = cartState.path("qty");
    prices.fieldNames().forEachRemaining(product -> {
      JsonNode price = prices.get(product);
      if (price.isNumber()) {
        items.put(product, new Item(price.asLong(), quantities.path(product).asLong(0)));
      }
    });
    return items;
  }

  /** A key's latest value, or null if its entity or value does not exist. */
  final JsonNode keyOrNull(EntityId entity, String key) {
    try {
      JsonNode value = troupe.getKey(entity, key).join();
      return value == null || value.isNull() ? null : value;
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException error && error.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
  }

  /** The product currently listed in a slot. */
  final String currentProduct(MarketplaceWorkload.ProductSlot slot) {
    return productId(slot, generations.get(slotIndex(slot)));
  }

  int generation(MarketplaceWorkload.ProductSlot slot) {
    return generations.get(slotIndex(slot));
  }

  /** Records that the slot's generation {@code from} was deleted and {@code from + 1} listed. */
  final void relisted(MarketplaceWorkload.ProductSlot slot, int from) {
    generations.compareAndSet(slotIndex(slot), from, from + 1);
  }

  final int slotIndex(MarketplaceWorkload.ProductSlot slot) {
    return slot.seller() * shape.productsPerSeller() + slot.index();
  }

  final MarketplaceWorkload.ProductSlot slot(int slotIndex) {
    return new MarketplaceWorkload.ProductSlot(slotIndex / shape.productsPerSeller(),
        slotIndex % shape.productsPerSeller());
  }

  static String productId(MarketplaceWorkload.ProductSlot slot, int generation) {
    return "s" + slot.seller() + "-p" + slot.index() + "-g" + generation;
  }

  static int sellerOf(String productId) {
    return Integer.parseInt(parseProduct(productId).group(1));
  }

  static MarketplaceWorkload.ProductSlot slotOf(String productId) {
    Matcher matcher = parseProduct(productId);
    return new MarketplaceWorkload.ProductSlot(Integer.parseInt(matcher.group(1)),
        Integer.parseInt(matcher.group(2)));
  }

  static int generationOf(String productId) {
    return Integer.parseInt(parseProduct(productId).group(3));
  }

  private static Matcher parseProduct(String productId) {
    Matcher matcher = PRODUCT_ID.matcher(productId);
    if (!matcher.matches()) {
      throw new IllegalArgumentException("not a product id: " + productId);
    }
    return matcher;
  }

  static EntityId product(String productId) {
    return new EntityId("Product", productId);
  }

  static EntityId stock(String productId) {
    return new EntityId("Stock", productId);
  }

  static EntityId cart(int customer) {
    return new EntityId("Cart", "c" + customer);
  }

  static EntityId customer(int customer) {
    return new EntityId("Customer", "c" + customer);
  }

  static EntityId seller(int seller) {
    return new EntityId("Seller", "s" + seller);
  }

  static String itemKey(String productId) {
    return ActionSpec.MemberBinding.memberKey("item", productId);
  }

  static String quantityKey(String productId) {
    return ActionSpec.MemberBinding.memberKey("qty", productId);
  }

  static ObjectNode productParams(String productId) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("product", productId);
    return params;
  }

  static TransactionRequest.Operation operation(EntityId entity, Turn turn) {
    return new TransactionRequest.Operation(entity, turn);
  }

  /** Planned attempts planned again because their forwards reached beyond their plan. */
  long replanned() {
    return troupe.transactionMetrics().replanned();
  }

  /** Planned transactions that ran dynamic because of their dependencies. */
  long plannedRanDynamic() {
    return troupe.transactionMetrics().plannedRanDynamic();
  }

  /** Engine wait-die retries so far (all of this engine's transactions). */
  long conflictRetries() {
    return troupe.transactionMetrics().lockConflictRetries();
  }

  @Override
  public void close() {
    troupe.close();
    directory.close();
  }
}
