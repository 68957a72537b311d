package dev.troupe.bench;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.runtime.EntityView;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.CompletionException;

/**
 * The marketplace with the same consistency as {@link DeclaredMarketplace} kept by application
 * transactions and no dependencies, the way a careful developer would:
 *
 * <ul>
 *   <li>each product keeps an index of the carts holding it, a key family {@code cart[c<i>]},
 *       and an {@code indexVersion} that every cart joining the index raises;
 *   <li>AddItemToCart reads the price, then in one transaction puts the cart in the index, only
 *       if the price is still the one read (compare-and-set), and copies the price into the cart;
 *   <li>DeleteItemInCart removes the item and takes the cart out of the product's index;
 *   <li>UpdatePrice reads the product's index and version, then in one transaction writes the
 *       price and every indexed cart's item, only if no cart joined since (the version is
 *       unchanged) and every cart still holds the item; otherwise it reads again;
 *   <li>Checkout also checks every item's price against its product (compare-and-set), takes the
 *       cart out of the products' indexes and adds each order to its seller's dashboard
 *       ({@code recordOrder});
 *   <li>DeleteProduct reads the index and version, then in one transaction deletes the product,
 *       its stock and the item (price and quantity) in every indexed cart, only if no cart joined
 *       since and every cart still holds the item, and lists the next generation.
 * </ul>
 *
 * <p>A cart leaving an index does not raise the version: an UpdatePrice or DeleteProduct that
 * still names it fails on the cart (its item is gone) and reads again. Every deletion is guarded
 * by a precondition on its own entity ({@code requireItem}, {@code requireIndexed}, {@code
 * requireStocked}, {@code retire}): a transaction's parts run side by side, so a precondition on
 * one entity cannot keep another's deletion of an absent key from failing the transaction with
 * {@code not_found} first. These transactions have no dependencies, so they run planned (the
 * engine's default).
 */
final class HandCodedMarketplace extends TroupeMarketplace {
  private static final String SPECS = """
      type: Product
      admission: keys
      keys:
        price: {kind: register}
        seller: {kind: register}
        indexVersion: {kind: register, default: 0}
        cart: {kind: register, family: true}
      actions:
        index:
          params: {customer: string, priceSeen: int}
          members: {entry: "cart[customer]"}
          pre: ["price == priceSeen"]
          effect: {entry: "true", indexVersion: "indexVersion + 1"}
        checkOut:
          params: {customer: string, priceSeen: int}
          members: {entry: "cart[customer]"}
          pre: ["price == priceSeen", "entry != null"]
        requireIndexed:
          params: {customer: string}
          members: {entry: "cart[customer]"}
          pre: ["entry != null"]
        setPrice:
          params: {newPrice: int, versionSeen: int}
          pre: ["price != null", "indexVersion == versionSeen"]
          effect: {price: "newPrice"}
        retire:
          params: {versionSeen: int}
          pre: ["price != null", "indexVersion == versionSeen"]
      ---
      type: Cart
      admission: keys
      keys:
        owner: {kind: register}
        item: {kind: register, family: true}
        qty: {kind: register, family: true}
      actions:
        putItem:
          params: {product: string, price: int, quantity: int}
          members: {held: "item[product]", units: "qty[product]"}
          pre: ["held == null"]
          effect: {held: "price", units: "quantity"}
        setItemPrice:
          params: {product: string, newPrice: int}
          members: {held: "item[product]"}
          pre: ["held != null"]
          effect: {held: "newPrice"}
      """ + CART_COMMON_ACTIONS;

  HandCodedMarketplace(MarketplaceWorkload.Shape shape, TemporaryDirectory directory,
      Troupe troupe) {
    super(HAND_CODED, shape, directory, troupe);
  }

  @Override
  String productAndCartSpecs() {
    return SPECS;
  }

  @Override
  List<TransactionRequest.Operation> listProduct(String product, int seller, long price,
      long stock) {
    return List.of(
        operation(stock(product), new Turn.AssignKeys(Map.of("available",
            LongNode.valueOf(stock)))),
        operation(product(product), new Turn.AssignKeys(Map.of("price", LongNode.valueOf(price),
            "seller", TextNode.valueOf("s" + seller)))));
  }

  @Override
  Outcome addItem(MarketplaceWorkload.AddItemToCart add) {
    EntityId cart = cart(add.customer());
    for (int attempt = 1; ; attempt++) {
      String product = currentProduct(add.product());
      JsonNode price = keyOrNull(product(product), "price");
      if (price == null && product.equals(currentProduct(add.product()))) {
        return Outcome.REJECTED; // deleted, not yet replaced
      }
      if (price != null) {
        ObjectNode params = productParams(product);
        params.put("quantity", add.quantity());
        if (readCart(add.customer()).containsKey(product)) {
          if (invoke(cart, "addQuantity", params)) {
            return Outcome.COMMITTED;
          }
        } else {
          params.put("price", price.asLong());
          ObjectNode index = Json.NODES.objectNode();
          index.put("customer", cart.id());
          index.put("priceSeen", price.asLong());
          if (transact(List.of(
              operation(product(product), new Turn.InvokeAction("index", index)),
              operation(cart, new Turn.InvokeAction("putItem", params))),
              TransactionRequest.Mode.AUTO) != null) {
            return Outcome.COMMITTED;
          }
        }
      }
      // The price changed, the item came or went, or the product was replaced.
      if (attempt == MAX_ATTEMPTS) {
        return Outcome.ABORTED;
      }
      applicationRetries.increment();
    }
  }

  @Override
  Outcome deleteItem(MarketplaceWorkload.DeleteItemInCart delete) {
    SortedMap<String, Item> items = readCart(delete.customer());
    if (items.isEmpty()) {
      return Outcome.REJECTED;
    }
    String product = new ArrayList<>(items.keySet()).get(delete.slot() % items.size());
    EntityId cart = cart(delete.customer());
    boolean deleted = transact(List.of(
        operation(cart, new Turn.InvokeAction("requireItem", productParams(product))),
        operation(cart, new Turn.DeleteKey(itemKey(product))),
        operation(cart, new Turn.DeleteKey(quantityKey(product))),
        operation(product(product), new Turn.InvokeAction("requireIndexed", indexParams(cart))),
        operation(product(product), new Turn.DeleteKey(indexKey(cart)))),
        TransactionRequest.Mode.AUTO) != null;
    return deleted ? Outcome.COMMITTED : Outcome.REJECTED; // someone else took it out first
  }

  @Override
  Outcome updatePrice(MarketplaceWorkload.UpdatePrice update) {
    for (int attempt = 1; ; attempt++) {
      String product = currentProduct(update.product());
      Index index = readIndex(product);
      if (index == null) {
        if (product.equals(currentProduct(update.product()))) {
          return Outcome.REJECTED; // deleted, not yet replaced
        }
      } else {
        ObjectNode params = Json.NODES.objectNode();
        params.put("newPrice", update.price());
        params.put("versionSeen", index.version());
        List<TransactionRequest.Operation> operations = new ArrayList<>();
        operations.add(operation(product(product), new Turn.InvokeAction("setPrice", params)));
        for (String cart : index.carts()) {
          ObjectNode item = productParams(product);
          item.put("newPrice", update.price());
          operations.add(operation(new EntityId("Cart", cart),
              new Turn.InvokeAction("setItemPrice", item)));
        }
        if (transact(operations, TransactionRequest.Mode.AUTO) != null) {
          return Outcome.COMMITTED;
        }
      }
      // A cart joined or left the index since it was read, or the product was replaced.
      if (attempt == MAX_ATTEMPTS) {
        return Outcome.ABORTED;
      }
      applicationRetries.increment();
    }
  }

  @Override
  Outcome deleteProduct(MarketplaceWorkload.DeleteProduct delete) {
    for (int attempt = 1; ; attempt++) {
      int generation = generation(delete.product());
      String old = productId(delete.product(), generation);
      Index index = readIndex(old);
      if (index == null) {
        return Outcome.REJECTED; // a concurrent DeleteProduct replaced it first
      }
      ObjectNode retire = Json.NODES.objectNode();
      retire.put("versionSeen", index.version());
      List<TransactionRequest.Operation> operations = new ArrayList<>();
      operations.add(operation(product(old), new Turn.InvokeAction("retire", retire)));
      operations.add(operation(product(old), new Turn.DeleteEntity()));
      operations.add(operation(stock(old), new Turn.InvokeAction("requireStocked",
          Json.NODES.objectNode())));
      operations.add(operation(stock(old), new Turn.DeleteEntity()));
      for (String cart : index.carts()) {
        EntityId entity = new EntityId("Cart", cart);
        // A cart that left the index since it was read fails this: read again.
        operations.add(operation(entity, new Turn.InvokeAction("requireItem",
            productParams(old))));
        operations.add(operation(entity, new Turn.DeleteKey(itemKey(old))));
        operations.add(operation(entity, new Turn.DeleteKey(quantityKey(old))));
      }
      operations.addAll(listProduct(productId(delete.product(), generation + 1),
          delete.product().seller(), delete.price(), delete.stock()));
      if (transact(operations, TransactionRequest.Mode.AUTO) != null) {
        relisted(delete.product(), generation);
        return Outcome.COMMITTED;
      }
      // A cart joined or left the index since it was read (or the product went meanwhile).
      if (attempt == MAX_ATTEMPTS) {
        return Outcome.ABORTED;
      }
      applicationRetries.increment();
    }
  }

  @Override
  List<TransactionRequest.Operation> checkoutProductOperations(int customer,
      SortedMap<String, Item> items) {
    List<TransactionRequest.Operation> operations = new ArrayList<>();
    EntityId cart = cart(customer);
    items.forEach((product, item) -> {
      ObjectNode check = indexParams(cart);
      check.put("priceSeen", item.price());
      operations.add(operation(product(product), new Turn.InvokeAction("checkOut", check)));
      operations.add(operation(product(product), new Turn.DeleteKey(indexKey(cart))));
    });
    return operations;
  }

  @Override
  List<TransactionRequest.Operation> checkoutOrderOperations(EntityId order, int seller,
      long total) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("total", total);
    return List.of(operation(seller(seller), new Turn.InvokeAction("recordOrder", params)));
  }

  @Override
  TransactionRequest.Mode checkoutMode() {
    return TransactionRequest.Mode.AUTO;
  }

  /** A product's cart index as committed: the carts and the version. */
  private record Index(long version, List<String> carts) {}

  /** The product's index, or null if the product does not exist (any more). */
  private Index readIndex(String product) {
    EntityView view;
    try {
      view = troupe.get(product(product)).join();
    } catch (CompletionException e) {
      if (e.getCause() instanceof TroupeException error && error.code() == ErrorCode.NOT_FOUND) {
        return null;
      }
      throw e;
    }
    JsonNode state = view.state();
    if (!state.path("price").isNumber()) {
      return null;
    }
    List<String> carts = new ArrayList<>();
    state.path("cart").fieldNames().forEachRemaining(carts::add);
    return new Index(state.path("indexVersion").asLong(), carts);
  }

  private static ObjectNode indexParams(EntityId cart) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("customer", cart.id());
    return params;
  }

  private static String indexKey(EntityId cart) {
    return dev.troupe.model.spec.ActionSpec.MemberBinding.memberKey("cart", cart.id());
  }
}
