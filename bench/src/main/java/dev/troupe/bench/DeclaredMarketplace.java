package dev.troupe.bench;

import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.model.Json;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import dev.troupe.runtime.TransactionRequest;
import dev.troupe.runtime.Troupe;
import dev.troupe.txn.Turn;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import java.util.concurrent.CompletionException;

/**
 * The marketplace with its consistency declared as dependencies (smsa.txt §4.6.1):
 *
 * <ul>
 *   <li>a cart item's price replicates its product's price: {@code Product/p.price ->
 *       Cart/c.item[p]}, an update dependency with {@code replicate}, registered by the
 *       AddItemToCart transaction that puts the item in the cart (registration copies the current
 *       price); with it two delete dependencies from the same leader, to {@code item[p]} and to
 *       {@code qty[p]}, so that the item leaves every cart with its product;
 *   <li>stock is a foreign key of its product: {@code Product/p.price -> Stock/p.available}, a
 *       delete dependency registered when the product is listed;
 *   <li>each seller's dashboard is a materialized view of its orders: {@code Order/o.total ->
 *       Seller/s.revenue} ({@code sum}) and {@code -> Seller/s.orders} ({@code count}), registered
 *       in the Checkout transaction that creates the order.
 * </ul>
 *
 * <p>So UpdatePrice is one write of the price (the engine forwards it to every cart holding the
 * product, in the same transaction), DeleteProduct one deletion of the product (the engine deletes
 * its stock and cart items), DeleteItemInCart and Checkout delete cart items (the engine
 * deregisters their dependencies at the product), and Checkout never touches a product or a
 * seller itself. Transactions that register dependencies or write a key with dependencies run
 * dynamic (the engine requires it for registrations, and a planned one that forwards would run
 * twice).
 */
final class DeclaredMarketplace extends TroupeMarketplace {
  private static final String SPECS = """
      type: Product
      admission: keys
      keys:
        price: {kind: register}
        seller: {kind: register}
      actions:
        requireListed:
          pre: ["price != null"]
        setPrice:
          params: {newPrice: int}
          pre: ["price != null"]
          effect: {price: "newPrice"}
      ---
      type: Cart
      admission: keys
      keys:
        owner: {kind: register}
        item: {kind: register, family: true}
        qty: {kind: register, family: true}
      actions:
        putQuantity:
          params: {product: string, quantity: int}
          members: {held: "item[product]", units: "qty[product]"}
          pre: ["held == null"]
          effect: {units: "quantity"}
      """ + CART_COMMON_ACTIONS;

  DeclaredMarketplace(MarketplaceWorkload.Shape shape, TemporaryDirectory directory,
      Troupe troupe) {
    super(DECLARED, shape, directory, troupe);
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
            "seller", TextNode.valueOf("s" + seller)))),
        operation(product(product), new Turn.RegisterDependency(deleteDependency(
            product(product), "price", stock(product), "available"))));
  }

  @Override
  Outcome addItem(MarketplaceWorkload.AddItemToCart add) {
    EntityId cart = cart(add.customer());
    for (int attempt = 1; ; attempt++) {
      String product = currentProduct(add.product());
      ObjectNode params = productParams(product);
      params.put("quantity", add.quantity());
      if (readCart(add.customer()).containsKey(product)) {
        if (invoke(cart, "addQuantity", params)) {
          return Outcome.COMMITTED;
        }
      } else {
        // The cart takes the units; registering the replica copies the price into item[p].
        List<TransactionRequest.Operation> operations = List.of(
            operation(cart, new Turn.InvokeAction("putQuantity", params)),
            operation(product(product), new Turn.InvokeAction("requireListed",
                Json.NODES.objectNode())),
            operation(product(product), new Turn.RegisterDependency(new Dependency(
                DependencyKind.UPDATE, new KeyReference(product(product), "price"),
                new KeyReference(cart, itemKey(product)), new DependencyFunction.Replicate()))),
            operation(product(product), new Turn.RegisterDependency(deleteDependency(
                product(product), "price", cart, itemKey(product)))),
            operation(product(product), new Turn.RegisterDependency(deleteDependency(
                product(product), "price", cart, quantityKey(product)))));
        try {
          if (transact(operations, TransactionRequest.Mode.AUTO) != null) {
            return Outcome.COMMITTED;
          }
        } catch (CompletionException e) {
          // Another add of this product to this cart registered first (it may not have reached
          // the cart when the cart was read): the next attempt adds to its quantity.
          if (!(e.getCause() instanceof TroupeException error
              && error.code() == ErrorCode.CONFLICT)) {
            throw e;
          }
        }
        if (keyOrNull(product(product), "price") == null
            && product.equals(currentProduct(add.product()))) {
          return Outcome.REJECTED; // deleted, not yet replaced
        }
      }
      // The item came or went since the cart was read, or the product was replaced.
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
    // Deleting the follower keys deregisters their dependencies at the product.
    boolean deleted = transact(List.of(
        operation(cart, new Turn.InvokeAction("requireItem", productParams(product))),
        operation(cart, new Turn.DeleteKey(itemKey(product))),
        operation(cart, new Turn.DeleteKey(quantityKey(product)))),
        TransactionRequest.Mode.AUTO) != null;
    return deleted ? Outcome.COMMITTED : Outcome.REJECTED; // someone else took it out first
  }

  @Override
  Outcome updatePrice(MarketplaceWorkload.UpdatePrice update) {
    String product = currentProduct(update.product());
    ObjectNode params = Json.NODES.objectNode();
    params.put("newPrice", update.price());
    // One write; the engine forwards it to every cart item replicating the price.
    boolean updated = transact(List.of(
        operation(product(product), new Turn.InvokeAction("setPrice", params))),
        TransactionRequest.Mode.AUTO) != null;
    return updated ? Outcome.COMMITTED : Outcome.REJECTED; // the product was just deleted
  }

  @Override
  Outcome deleteProduct(MarketplaceWorkload.DeleteProduct delete) {
    int generation = generation(delete.product());
    String old = productId(delete.product(), generation);
    String next = productId(delete.product(), generation + 1);
    List<TransactionRequest.Operation> operations = new ArrayList<>();
    operations.add(operation(product(old), new Turn.InvokeAction("requireListed",
        Json.NODES.objectNode())));
    // The engine deletes the stock and every cart item along the delete dependencies.
    operations.add(operation(product(old), new Turn.DeleteEntity()));
    operations.addAll(listProduct(next, delete.product().seller(), delete.price(),
        delete.stock()));
    try {
      if (transact(operations, TransactionRequest.Mode.AUTO) == null) {
        return Outcome.REJECTED; // a concurrent DeleteProduct replaced it first
      }
    } catch (CompletionException e) {
      // The same, seen first as the next generation's stock dependency already registered.
      if (e.getCause() instanceof TroupeException error && error.code() == ErrorCode.CONFLICT) {
        return Outcome.REJECTED;
      }
      throw e;
    }
    relisted(delete.product(), generation);
    return Outcome.COMMITTED;
  }

  @Override
  List<TransactionRequest.Operation> checkoutProductOperations(int customer,
      SortedMap<String, Item> items) {
    return List.of(); // the cart's replicas are the product's prices
  }

  @Override
  List<TransactionRequest.Operation> checkoutOrderOperations(EntityId order, int seller,
      long total) {
    return List.of(
        operation(order, new Turn.RegisterDependency(new Dependency(DependencyKind.UPDATE,
            new KeyReference(order, "total"), new KeyReference(seller(seller), "revenue"),
            new DependencyFunction.Sum()))),
        operation(order, new Turn.RegisterDependency(new Dependency(DependencyKind.UPDATE,
            new KeyReference(order, "total"), new KeyReference(seller(seller), "orders"),
            new DependencyFunction.Count()))));
  }

  @Override
  TransactionRequest.Mode checkoutMode() {
    return TransactionRequest.Mode.AUTO;
  }

  private static Dependency deleteDependency(EntityId leader, String leaderKey, EntityId follower,
      String followerKey) {
    return new Dependency(DependencyKind.DELETE, new KeyReference(leader, leaderKey),
        new KeyReference(follower, followerKey), null);
  }
}
