package dev.troupe.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * The Online Marketplace workload (smsa.txt §4.6, after the Online Marketplace benchmark of
 * Laskaris et al.): sellers with products and their stock, customers with carts, and the
 * transactions that move products from the catalog through carts into orders.
 *
 * <p><b>Mix</b>, in per mille: the paper's four transactions in the paper's proportions (30%
 * AddItemToCart, 20% DeleteItemInCart, 10% UpdatePrice, 40% Checkout) scaled to 96% of the mix,
 * plus 3% seller dashboard reads and 1% product deletions: {@value #ADD_ITEM} AddItemToCart,
 * {@value #DELETE_ITEM} DeleteItemInCart, {@value #UPDATE_PRICE} UpdatePrice, {@value #CHECKOUT}
 * Checkout, {@value #DASHBOARD} SellerDashboard, {@value #DELETE_PRODUCT} DeleteProduct.
 *
 * <p><b>Skew</b>, as in SmSa: {@code actorSkew} is the share of customers and of sellers that are
 * hot, {@code keySkew} the share of each seller's products that are hot; a pick falls on the hot
 * set with probability 3/4 and on the rest otherwise; a share of 1 makes picks uniform. A product
 * is picked as a seller (actor skew) and one of its products (key skew).
 *
 * <p>Pure: a generator is a function of its seed; not thread-safe (one per worker).
 */
public final class MarketplaceWorkload {
  static final int ADD_ITEM = 288;
  static final int DELETE_ITEM = 192;
  static final int UPDATE_PRICE = 96;
  static final int CHECKOUT = 384;
  static final int DASHBOARD = 30;
  static final int DELETE_PRODUCT = 10;
  /** Units of a product one AddItemToCart puts in the cart: 1 to this. */
  static final int MAX_QUANTITY = 3;
  /** Items a Checkout buys: 1 to this (SmSa: 1 to 5). */
  static final int MAX_CHECKOUT_ITEMS = 5;
  /** Prices are whole cents from {@value #MIN_PRICE} to {@value #MAX_PRICE}. */
  static final int MIN_PRICE = 100;
  static final int MAX_PRICE = 10_000;

  static {
    if (ADD_ITEM + DELETE_ITEM + UPDATE_PRICE + CHECKOUT + DASHBOARD + DELETE_PRODUCT != 1000) {
      throw new AssertionError("the mix must add up to 1000 per mille");
    }
  }

  /**
   * The shape of the data and the load.
   *
   * @param sellers seller entities
   * @param productsPerSeller products each seller lists (each a Product and a Stock entity)
   * @param customers customers (each a Customer and a Cart entity)
   * @param actorSkew share of hot customers and of hot sellers, in (0, 1]
   * @param keySkew share of hot products of each seller, in (0, 1]
   */
  public record Shape(int sellers, int productsPerSeller, int customers, double actorSkew,
      double keySkew) {
    public Shape {
      if (sellers < 1 || productsPerSeller < 1) {
        throw new IllegalArgumentException("the marketplace needs a seller with a product");
      }
      if (customers < 1) {
        throw new IllegalArgumentException("the marketplace needs a customer");
      }
      if (!(actorSkew > 0 && actorSkew <= 1) || !(keySkew > 0 && keySkew <= 1)) {
        throw new IllegalArgumentException("skews are shares in (0, 1], e.g. 0.02 for 2%");
      }
    }

    public int products() {
      return sellers * productsPerSeller;
    }
  }

  /** A product slot in the catalog: its seller and its index among the seller's products. */
  public record ProductSlot(int seller, int index) {}

  /** One marketplace transaction with its arguments. */
  public sealed interface Transaction {
    /** Its name in reports. */
    default String name() {
      return getClass().getSimpleName();
    }
  }

  /** Puts {@code quantity} units of a product in a customer's cart (more, if it is there). */
  public record AddItemToCart(int customer, ProductSlot product, int quantity)
      implements Transaction {}

  /** Removes one item from a customer's cart: the {@code slot}-th (modulo its size). */
  public record DeleteItemInCart(int customer, int slot) implements Transaction {}

  /** A seller changes a product's price. */
  public record UpdatePrice(ProductSlot product, long price) implements Transaction {}

  /**
   * A customer buys the cart. The customer first fills the cart up to {@code items} items with
   * the adds of {@code topUps} (in order, as many as needed), then checks out every item it holds.
   */
  public record Checkout(int customer, int items, List<AddItemToCart> topUps)
      implements Transaction {
    public Checkout {
      topUps = List.copyOf(topUps);
    }
  }

  /** Reads a seller's dashboard (revenue and number of orders). */
  public record SellerDashboard(int seller) implements Transaction {}

  /**
   * A seller withdraws a product: the product, its stock and every cart item of it go; the seller
   * lists a new product in its place (a new generation of the slot) with {@code price} and {@code
   * stock}, so the catalog keeps its size.
   */
  public record DeleteProduct(ProductSlot product, long price, long stock)
      implements Transaction {}

  private final Shape shape;
  private final SplittableRandom random;
  private final long stockPerProduct;

  public MarketplaceWorkload(Shape shape, long stockPerProduct, long seed) {
    this.shape = shape;
    this.stockPerProduct = stockPerProduct;
    this.random = new SplittableRandom(seed);
  }

  /** The next transaction. */
  public Transaction next() {
    int dice = random.nextInt(1000);
    if (dice < ADD_ITEM) {
      return add(customer());
    }
    dice -= ADD_ITEM;
    if (dice < DELETE_ITEM) {
      return new DeleteItemInCart(customer(), random.nextInt(1 << 20));
    }
    dice -= DELETE_ITEM;
    if (dice < UPDATE_PRICE) {
      return new UpdatePrice(product(), price());
    }
    dice -= UPDATE_PRICE;
    if (dice < CHECKOUT) {
      int customer = customer();
      int items = 1 + random.nextInt(MAX_CHECKOUT_ITEMS);
      List<AddItemToCart> topUps = new ArrayList<>();
      for (int item = 0; item < items; item++) {
        topUps.add(add(customer));
      }
      return new Checkout(customer, items, topUps);
    }
    dice -= CHECKOUT;
    if (dice < DASHBOARD) {
      return new SellerDashboard(pick(shape.sellers(), shape.actorSkew()));
    }
    return new DeleteProduct(product(), price(), stockPerProduct);
  }

  private AddItemToCart add(int customer) {
    return new AddItemToCart(customer, product(), 1 + random.nextInt(MAX_QUANTITY));
  }

  private int customer() {
    return pick(shape.customers(), shape.actorSkew());
  }

  private ProductSlot product() {
    return new ProductSlot(pick(shape.sellers(), shape.actorSkew()),
        pick(shape.productsPerSeller(), shape.keySkew()));
  }

  private long price() {
    return MIN_PRICE + random.nextInt(MAX_PRICE - MIN_PRICE + 1);
  }

  /** An index in [0, size), skewed as SmSa picks ({@link HotSetPick}). */
  int pick(int size, double skew) {
    return HotSetPick.pick(random, size, skew);
  }

  /** A price for the catalog at setup, the same for every contender with the same seed. */
  static long initialPrice(long seed, int product) {
    return MIN_PRICE + new SplittableRandom(seed * 31 + product).nextInt(MAX_PRICE - MIN_PRICE + 1);
  }
}
