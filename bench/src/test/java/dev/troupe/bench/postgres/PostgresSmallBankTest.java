package dev.troupe.bench.postgres;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.troupe.bench.postgres.PostgresSmallBank.Customer;
import dev.troupe.bench.postgres.PostgresSmallBank.Outcome;
import dev.troupe.bench.postgres.PostgresSmallBank.RetriesExhaustedException;
import dev.troupe.bench.postgres.PostgresSmallBank.Settings;
import dev.troupe.storage.postgres.PostgresInstance;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * SmallBank's PostgreSQL baseline against a real, throwaway PostgreSQL server started and stopped
 * here. Balances are checked through a separate JDBC connection, so that a test sees checking and
 * savings apart and does not trust the class under test to report its own effects.
 */
class PostgresSmallBankTest {
  private static final int BRANCHES = 2;
  private static final int CUSTOMERS_PER_BRANCH = 5;
  private static final long OPENING_BALANCE = 1_000;
  private static final long TOTAL_MONEY = BRANCHES * CUSTOMERS_PER_BRANCH * 2 * OPENING_BALANCE;
  private static final Customer MISSING = new Customer(BRANCHES, 0);

  static PostgresInstance postgres;
  static PostgresSmallBank bank;
  /** Reads the table directly, with autocommit: one SERIALIZABLE transaction per statement. */
  static Connection inspector;

  private record Row(long checking, long savings) {}

  @BeforeAll
  static void start() throws SQLException {
    postgres = PostgresInstance.start(64);
    bank = PostgresSmallBank.open(new Settings(postgres.jdbcUrl(), 16, 10_000, 30_000));
    inspector = DriverManager.getConnection(postgres.jdbcUrl());
  }

  @AfterAll
  static void stop() throws SQLException {
    if (inspector != null) {
      inspector.close();
    }
    if (bank != null) {
      bank.close();
    }
    if (postgres != null) {
      postgres.close();
    }
  }

  @BeforeEach
  void reload() {
    bank.load(BRANCHES, CUSTOMERS_PER_BRANCH, OPENING_BALANCE, done -> { });
  }

  @Test
  void loadReplacesTheTableAndReportsProgressAfterEachBatch() throws SQLException {
    List<Long> progress = new ArrayList<>();
    bank.load(3, 7_000, 250, progress::add);
    List<Long> expected = new ArrayList<>();
    for (long done = PostgresSmallBank.LOAD_BATCH_ROWS; done < 21_000;
        done += PostgresSmallBank.LOAD_BATCH_ROWS) {
      expected.add(done);
    }
    expected.add(21_000L);
    assertEquals(expected, progress);
    assertEquals(3L * 7_000 * 2 * 250, bank.totalMoney());
    assertEquals(21_000, rows().size());
    assertEquals(new Row(250, 250), rows().get(new Customer(2, 6_999)));
    assertEquals(500, bank.balance(new Customer(1, 3_456)));
    try (Statement statement = inspector.createStatement();
        ResultSet options = statement.executeQuery(
            "SELECT array_to_string(reloptions, ',') FROM pg_class"
                + " WHERE relname = 'smallbank_accounts'")) {
      options.next();
      assertTrue(options.getString(1).contains("fillfactor="), options.getString(1));
    }

    bank.load(BRANCHES, CUSTOMERS_PER_BRANCH, OPENING_BALANCE, done -> { });
    assertEquals(TOTAL_MONEY, bank.totalMoney());
    assertEquals(BRANCHES * CUSTOMERS_PER_BRANCH, rows().size());
    IllegalArgumentException gone =
        assertThrows(IllegalArgumentException.class, () -> bank.balance(new Customer(2, 0)));
    assertEquals("no customer (2, 0)", gone.getMessage());
  }

  @Test
  void depositCheckingAddsToCheckingOnly() throws SQLException {
    Map<Customer, Row> before = rows();
    Customer customer = new Customer(0, 1);
    assertEquals(Outcome.COMMITTED, bank.depositChecking(customer, 250));
    assertOnlyChanged(before, Map.of(customer, new Row(1_250, 1_000)));
    assertEquals(2_250, bank.balance(customer));
    assertEquals(TOTAL_MONEY + 250, bank.totalMoney());
  }

  @Test
  void transactSavingsAcceptsDownToZeroAndRejectsBelow() throws SQLException {
    Map<Customer, Row> before = rows();
    Customer customer = new Customer(1, 2);
    assertEquals(Outcome.COMMITTED, bank.transactSavings(customer, 300));
    assertOnlyChanged(before, Map.of(customer, new Row(1_000, 1_300)));
    assertEquals(Outcome.COMMITTED, bank.transactSavings(customer, -1_300));
    assertOnlyChanged(before, Map.of(customer, new Row(1_000, 0)));
    assertEquals(1_000, bank.balance(customer));

    assertEquals(Outcome.REJECTED, bank.transactSavings(customer, -1));
    assertOnlyChanged(before, Map.of(customer, new Row(1_000, 0)));
    assertEquals(1_000, bank.balance(customer));
    assertEquals(TOTAL_MONEY - 1_000, bank.totalMoney());
  }

  @Test
  void amalgamateMovesEverythingIntoTheDestinationsChecking() throws SQLException {
    Map<Customer, Row> before = rows();
    Customer from = new Customer(0, 0);
    Customer to = new Customer(1, 4);
    bank.depositChecking(from, 5);
    assertEquals(Outcome.COMMITTED, bank.amalgamate(from, to));
    assertOnlyChanged(before, Map.of(from, new Row(0, 0), to, new Row(3_005, 1_000)));
    assertEquals(0, bank.balance(from));
    assertEquals(4_005, bank.balance(to));

    // An empty account amalgamates to nothing.
    assertEquals(Outcome.COMMITTED, bank.amalgamate(from, to));
    assertOnlyChanged(before, Map.of(from, new Row(0, 0), to, new Row(3_005, 1_000)));
    assertEquals(TOTAL_MONEY + 5, bank.totalMoney());
  }

  @Test
  void writeCheckOverdrawsWithAPenaltyOnlyWhenTheBalanceIsShort() throws SQLException {
    Map<Customer, Row> before = rows();
    Customer customer = new Customer(0, 2);
    assertEquals(1_500, bank.writeCheck(customer, 1_500));
    assertOnlyChanged(before, Map.of(customer, new Row(-500, 1_000)));
    // The balance covers exactly the check: no penalty.
    assertEquals(500, bank.writeCheck(customer, 500));
    assertOnlyChanged(before, Map.of(customer, new Row(-1_000, 1_000)));
    assertEquals(0, bank.balance(customer));
    // Short by one: the check clears with a penalty of one.
    assertEquals(2, bank.writeCheck(customer, 1));
    assertOnlyChanged(before, Map.of(customer, new Row(-1_002, 1_000)));
    assertEquals(-2, bank.balance(customer));
    assertEquals(TOTAL_MONEY - 2_002, bank.totalMoney());
  }

  @Test
  void sendPaymentMovesCheckingAndRejectsWhatCheckingCannotCover() throws SQLException {
    Map<Customer, Row> before = rows();
    Customer from = new Customer(1, 0);
    Customer to = new Customer(0, 3);
    assertEquals(Outcome.COMMITTED, bank.sendPayment(from, to, 400));
    assertOnlyChanged(before, Map.of(from, new Row(600, 1_000), to, new Row(1_400, 1_000)));
    assertEquals(Outcome.COMMITTED, bank.sendPayment(from, to, 600));
    assertOnlyChanged(before, Map.of(from, new Row(0, 1_000), to, new Row(2_000, 1_000)));
    // Savings would cover it, but a payment draws on checking only.
    assertEquals(Outcome.REJECTED, bank.sendPayment(from, to, 1));
    assertOnlyChanged(before, Map.of(from, new Row(0, 1_000), to, new Row(2_000, 1_000)));
    assertEquals(1_000, bank.balance(from));
    assertEquals(3_000, bank.balance(to));
    assertEquals(TOTAL_MONEY, bank.totalMoney());
  }

  @Test
  void multiTransferDebitsEverySourceForEveryDestination() throws SQLException {
    Map<Customer, Row> before = rows();
    List<Customer> sources = List.of(new Customer(0, 1), new Customer(0, 0));
    List<Customer> destinations = List.of(new Customer(1, 0), new Customer(0, 4),
        new Customer(1, 1));
    assertEquals(Outcome.COMMITTED, bank.multiTransfer(sources, destinations, 100));
    Map<Customer, Row> changes = new LinkedHashMap<>();
    sources.forEach(source -> changes.put(source, new Row(700, 1_000)));
    destinations.forEach(destination -> changes.put(destination, new Row(1_200, 1_000)));
    assertOnlyChanged(before, changes);
    assertEquals(TOTAL_MONEY, bank.totalMoney());

    // (0, 2) could pay 750, (0, 0) has only 700 left: nobody pays.
    assertEquals(Outcome.REJECTED, bank.multiTransfer(
        List.of(new Customer(0, 2), new Customer(0, 0)), destinations, 250));
    assertOnlyChanged(before, changes);

    // Debits of exactly the whole checking balance go through.
    List<Customer> fourDestinations = List.of(new Customer(1, 0), new Customer(1, 1),
        new Customer(1, 2), new Customer(1, 3));
    assertEquals(Outcome.COMMITTED, bank.multiTransfer(
        List.of(new Customer(0, 2), new Customer(0, 3)), fourDestinations, 250));
    changes.put(new Customer(0, 2), new Row(0, 1_000));
    changes.put(new Customer(0, 3), new Row(0, 1_000));
    changes.put(new Customer(1, 0), new Row(1_700, 1_000));
    changes.put(new Customer(1, 1), new Row(1_700, 1_000));
    changes.put(new Customer(1, 2), new Row(1_500, 1_000));
    changes.put(new Customer(1, 3), new Row(1_500, 1_000));
    assertOnlyChanged(before, changes);
    assertEquals(TOTAL_MONEY, bank.totalMoney());
  }

  @Test
  void badArgumentsAreRefusedAndChangeNothing() throws SQLException {
    Map<Customer, Row> before = rows();
    Customer first = new Customer(0, 0);
    Customer second = new Customer(0, 1);
    Customer third = new Customer(1, 0);
    List<Executable> refused = List.of(
        () -> bank.depositChecking(first, 0),
        () -> bank.depositChecking(first, -5),
        () -> bank.depositChecking(MISSING, 10),
        () -> bank.transactSavings(MISSING, 10),
        () -> bank.balance(MISSING),
        () -> bank.writeCheck(first, 0),
        () -> bank.writeCheck(MISSING, 1),
        () -> bank.sendPayment(first, first, 10),
        () -> bank.sendPayment(first, second, 0),
        () -> bank.sendPayment(first, MISSING, 10),
        () -> bank.sendPayment(MISSING, first, 10),
        () -> bank.amalgamate(first, first),
        () -> bank.amalgamate(first, MISSING),
        () -> bank.amalgamate(MISSING, first),
        () -> bank.multiTransfer(List.of(), List.of(second), 10),
        () -> bank.multiTransfer(List.of(first), List.of(), 10),
        () -> bank.multiTransfer(List.of(first, second), List.of(second, third), 10),
        () -> bank.multiTransfer(List.of(first, first), List.of(third), 10),
        () -> bank.multiTransfer(List.of(first), List.of(third, third), 10),
        () -> bank.multiTransfer(List.of(first), List.of(third), 0),
        () -> bank.multiTransfer(List.of(first, second), List.of(third, MISSING), 10),
        () -> bank.multiTransfer(List.of(first), List.of(second, third, MISSING),
            Long.MAX_VALUE / 2),
        () -> new Customer(-1, 0),
        () -> new Customer(0, -1),
        () -> new Settings(postgres.jdbcUrl(), 0, 1, 1_000),
        () -> new Settings(postgres.jdbcUrl(), 1, -1, 1_000),
        () -> new Settings(postgres.jdbcUrl(), 1, 1, 249),
        () -> bank.load(0, 5, 1, done -> { }),
        () -> bank.load(1, 0, 1, done -> { }),
        () -> bank.load(1, 1, -1, done -> { }));
    for (int i = 0; i < refused.size(); i++) {
      assertThrows(IllegalArgumentException.class, refused.get(i), "case " + i);
    }
    IllegalArgumentException missing = assertThrows(IllegalArgumentException.class,
        () -> bank.sendPayment(first, MISSING, 10));
    assertEquals("no customer (2, 0)", missing.getMessage());
    assertEquals(before, rows());
    assertEquals(TOTAL_MONEY, bank.totalMoney());
  }

  @Test
  void aSerializationFailureIsRetriedAndCounted() throws Exception {
    Customer customer = new Customer(1, 1);
    Map<Customer, Row> before = rows();
    long retriesBefore = bank.serializationRetries();
    Outcome outcome = whileAnotherTransactionUpdates(customer,
        () -> bank.depositChecking(customer, 10));
    assertEquals(Outcome.COMMITTED, outcome);
    assertEquals(retriesBefore + 1, bank.serializationRetries());
    assertOnlyChanged(before, Map.of(customer, new Row(1_011, 1_000)));
  }

  @Test
  void exhaustedRetriesThrowAndChangeNothing() throws Exception {
    Customer from = new Customer(0, 0);
    Customer to = new Customer(0, 1);
    Map<Customer, Row> before = rows();
    try (PostgresSmallBank impatient = PostgresSmallBank.open(
        new Settings(postgres.jdbcUrl(), 1, 0, 10_000))) {
      // The payment debits (0, 0) first, then waits for the other transaction's lock on (0, 1)
      // and fails serialization when it commits: the debit must be undone too.
      ExecutionException failure = assertThrows(ExecutionException.class,
          () -> whileAnotherTransactionUpdates(to, () -> impatient.sendPayment(from, to, 100)));
      RetriesExhaustedException exhausted =
          assertInstanceOf(RetriesExhaustedException.class, failure.getCause());
      assertTrue(exhausted.getMessage().contains("in 1 attempt"), exhausted.getMessage());
      assertEquals(0, impatient.serializationRetries());
    }
    assertOnlyChanged(before, Map.of(to, new Row(1_001, 1_000)));
  }

  @Test
  void concurrentTransfersAmongFewCustomersConserveMoney() throws Exception {
    int threads = 16;
    int transactionsPerThread = 250;
    Map<Outcome, AtomicLong> outcomes = new EnumMap<>(Outcome.class);
    for (Outcome outcome : Outcome.values()) {
      outcomes.put(outcome, new AtomicLong());
    }
    ConcurrentLinkedQueue<Throwable> errors = new ConcurrentLinkedQueue<>();
    CountDownLatch startingGate = new CountDownLatch(1);
    ExecutorService executor = Executors.newFixedThreadPool(threads);
    try {
      List<Future<?>> workers = new ArrayList<>();
      for (int t = 0; t < threads; t++) {
        workers.add(executor.submit(() -> {
          startingGate.await();
          for (int i = 0; i < transactionsPerThread; i++) {
            try {
              outcomes.get(randomTransaction()).incrementAndGet();
            } catch (RuntimeException e) {
              errors.add(e);
            }
          }
          return null;
        }));
      }
      startingGate.countDown();
      for (Future<?> worker : workers) {
        worker.get(60, TimeUnit.SECONDS);
      }
    } finally {
      executor.shutdownNow();
    }
    if (!errors.isEmpty()) {
      fail(errors.size() + " transactions failed; the first: " + errors.peek(), errors.peek());
    }
    assertEquals((long) threads * transactionsPerThread,
        outcomes.get(Outcome.COMMITTED).get() + outcomes.get(Outcome.REJECTED).get());
    assertTrue(outcomes.get(Outcome.COMMITTED).get() > 0, "some transactions committed");
    assertEquals(TOTAL_MONEY, bank.totalMoney());
    // None of the three can overdraw, whatever the interleaving, if each ran in isolation.
    for (Map.Entry<Customer, Row> row : rows().entrySet()) {
      assertTrue(row.getValue().checking() >= 0 && row.getValue().savings() >= 0,
          row.toString());
    }
    System.out.println("concurrent SmallBank: " + outcomes + ", serialization retries so far "
        + bank.serializationRetries());
  }

  /** One random money-conserving transaction among the few loaded customers. */
  private static Outcome randomTransaction() {
    ThreadLocalRandom random = ThreadLocalRandom.current();
    List<Customer> customers = new ArrayList<>();
    for (int branch = 0; branch < BRANCHES; branch++) {
      for (int index = 0; index < CUSTOMERS_PER_BRANCH; index++) {
        customers.add(new Customer(branch, index));
      }
    }
    Collections.shuffle(customers, random);
    return switch (random.nextInt(3)) {
      case 0 -> bank.sendPayment(customers.get(0), customers.get(1), random.nextLong(1, 300));
      case 1 -> bank.amalgamate(customers.get(0), customers.get(1));
      default -> bank.multiTransfer(customers.subList(0, random.nextInt(1, 4)),
          customers.subList(4, 4 + random.nextInt(1, 4)), random.nextLong(1, 100));
    };
  }

  /**
   * Runs {@code transaction} while another SERIALIZABLE transaction holds an uncommitted update
   * of {@code customer}'s checking (adding one), and commits that one once {@code transaction}
   * waits for its row lock; {@code transaction} then fails serialization at least once.
   */
  private static <T> T whileAnotherTransactionUpdates(Customer customer, Callable<T> transaction)
      throws Exception {
    ExecutorService executor = Executors.newSingleThreadExecutor();
    try (Connection other = DriverManager.getConnection(postgres.jdbcUrl());
        Statement statement = other.createStatement()) {
      other.setAutoCommit(false);
      other.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
      statement.executeUpdate("UPDATE smallbank_accounts SET checking = checking + 1"
          + " WHERE branch = " + customer.branch() + " AND customer = " + customer.index());
      Future<T> result = executor.submit(transaction);
      awaitAWaitForARowLock();
      other.commit();
      return result.get(30, TimeUnit.SECONDS);
    } finally {
      executor.shutdownNow();
    }
  }

  private static void awaitAWaitForARowLock() throws SQLException, InterruptedException {
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
    while (System.nanoTime() < deadline) {
      try (Statement statement = inspector.createStatement();
          ResultSet waiting = statement.executeQuery("SELECT count(*) FROM pg_stat_activity"
              + " WHERE wait_event_type = 'Lock' AND query LIKE '%smallbank_accounts%'")) {
        waiting.next();
        if (waiting.getLong(1) > 0) {
          return;
        }
      }
      Thread.sleep(5);
    }
    fail("no transaction waited for the row lock within 10 s");
  }

  /** Every row, read directly. */
  private static Map<Customer, Row> rows() throws SQLException {
    Map<Customer, Row> rows = new LinkedHashMap<>();
    try (Statement statement = inspector.createStatement();
        ResultSet row = statement.executeQuery("SELECT branch, customer, checking, savings"
            + " FROM smallbank_accounts ORDER BY branch, customer")) {
      while (row.next()) {
        rows.put(new Customer(row.getInt(1), row.getInt(2)),
            new Row(row.getLong(3), row.getLong(4)));
      }
    }
    return rows;
  }

  /** The table now holds {@code before} with {@code changes} applied, and nothing else. */
  private static void assertOnlyChanged(Map<Customer, Row> before, Map<Customer, Row> changes)
      throws SQLException {
    Map<Customer, Row> expected = new LinkedHashMap<>(before);
    expected.putAll(changes);
    assertEquals(expected, rows());
  }
}
