package dev.troupe.bench.postgres;

import com.zaxxer.hikari.HikariDataSource;
import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.server.postgres.PostgresSupport;
import dev.troupe.storage.postgres.PostgresInstance;
import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongConsumer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyManager;

/**
 * The SmallBank benchmark in PostgreSQL at SERIALIZABLE: the baseline a benchmark runs next to
 * Troupe's SmallBank in the same run, so that both pay for the same guarantees.
 *
 * <p><b>Invariants</b>: every public operation except {@link #load} is exactly one SERIALIZABLE
 * transaction, so the operations behave as if run one at a time in some order. Money moves only
 * between checking and savings balances of existing customers: {@link #amalgamate}, {@link
 * #sendPayment} and {@link #multiTransfer} conserve {@link #totalMoney()}; {@link
 * #depositChecking}, {@link #transactSavings} and {@link #writeCheck} change it by exactly their
 * amount (plus the one-unit overdraft penalty). A {@link Outcome#REJECTED} transaction and one
 * that threw changed nothing.
 *
 * <p><b>Concurrency</b>: thread-safe; each call borrows a pooled connection (HikariCP) and blocks
 * the calling thread until PostgreSQL answers. Rows are written in (branch, customer) order, so two
 * transactions touching the same customers queue on row locks instead of deadlocking. A
 * serialization failure ({@code 40001}) or deadlock ({@code 40P01}) rolls the whole transaction
 * back and re-runs it after a short randomized backoff, up to {@code maxRetries} times; then
 * {@link RetriesExhaustedException}. {@link #load} drops the table: run it while nothing else
 * uses this instance.
 *
 * <p><b>Durability</b>: PostgreSQL's defaults, {@code fsync} and {@code synchronous_commit} on
 * (see {@link PostgresInstance}): a returned outcome is on disk.
 *
 * <p>The SQL is what an application would write: read the accounts with one {@code SELECT}, decide
 * in Java, write the new balances with {@code UPDATE}s, commit. A rejected transaction is
 * committed too, not rolled back: it wrote nothing, but PostgreSQL only vouches for data read in a
 * SERIALIZABLE transaction once that transaction commits, and a rejection is a decision taken on
 * what it read.
 */
public final class PostgresSmallBank implements AutoCloseable {
  /** Rows per {@code COPY} during {@link #load}: large enough to stream, small enough to report. */
  static final int LOAD_BATCH_ROWS = 10_000;

  private static final String TABLE = "smallbank_accounts";
  // The fill factor leaves room on each page for heap-only-tuple updates: every SmallBank
  // transaction rewrites rows in place, and HOT updates skip the primary-key index.
  private static final String CREATE_TABLE = """
      CREATE TABLE %s smallbank_accounts (
        branch int NOT NULL,
        customer int NOT NULL,
        checking bigint NOT NULL,
        savings bigint NOT NULL,
        PRIMARY KEY (branch, customer)
      ) WITH (fillfactor = 80)""";
  private static final String UPDATE_ACCOUNT = """
      UPDATE smallbank_accounts SET checking = ?, savings = ?
      WHERE branch = ? AND customer = ?""";
  private static final Comparator<Customer> KEY_ORDER =
      Comparator.comparingInt(Customer::branch).thenComparingInt(Customer::index);

  /**
   * @param jdbcUrl the database
   * @param poolSize connections, hence transactions PostgreSQL runs at once
   * @param maxRetries re-runs of a transaction after a serialization failure or deadlock
   * @param connectionTimeoutMillis how long a caller waits for a pooled connection
   */
  public record Settings(String jdbcUrl, int poolSize, int maxRetries,
      long connectionTimeoutMillis) {
    public Settings {
      Objects.requireNonNull(jdbcUrl, "jdbcUrl");
      if (poolSize < 1 || maxRetries < 0 || connectionTimeoutMillis < 250) {
        throw new IllegalArgumentException("pool size >= 1, retries >= 0 and a connection timeout"
            + " of at least 250 ms are required");
      }
    }
  }

  /** One customer: the branch, and the customer's index within it (both >= 0). */
  public record Customer(int branch, int index) {
    public Customer {
      if (branch < 0 || index < 0) {
        throw new IllegalArgumentException(
            "branch and index must be >= 0: (" + branch + ", " + index + ")");
      }
    }

    @Override
    public String toString() {
      return "(" + branch + ", " + index + ")";
    }
  }

  /**
   * {@code COMMITTED}, or {@code REJECTED} when the transaction's own logic refused (insufficient
   * funds); a rejected transaction changed nothing.
   */
  public enum Outcome { COMMITTED, REJECTED }

  /** A transaction failed serialization on every attempt; nothing was changed. */
  public static final class RetriesExhaustedException extends RuntimeException {
    RetriesExhaustedException(String message) {
      super(message);
    }
  }

  private record Account(long checking, long savings) {}

  private final HikariDataSource pool;
  private final int maxRetries;
  private final LongAdder retries = new LongAdder();

  private PostgresSmallBank(HikariDataSource pool, int maxRetries) {
    this.pool = pool;
    this.maxRetries = maxRetries;
  }

  /** Connects and creates the table if it does not exist. */
  public static PostgresSmallBank open(Settings settings) {
    HikariDataSource pool = PostgresSupport.pool(settings.jdbcUrl(), settings.poolSize(),
        settings.connectionTimeoutMillis(), false, "troupe-postgres-smallbank");
    try (Connection connection = pool.getConnection();
        Statement statement = connection.createStatement()) {
      statement.execute(CREATE_TABLE.formatted("IF NOT EXISTS"));
      connection.commit();
    } catch (SQLException e) {
      pool.close();
      throw PostgresSupport.unavailable("cannot create the schema", e);
    }
    return new PostgresSmallBank(pool, settings.maxRetries());
  }

  /**
   * Drops and recreates the table and inserts {@code branches * customersPerBranch} customers,
   * each with {@code openingBalance} in checking and in savings. Rows are streamed with {@code
   * COPY} in batches of {@value #LOAD_BATCH_ROWS}, each committed before {@code progress} is told
   * the rows done so far; then the table is vacuumed and analyzed, so that the measured run does
   * not begin by setting hint bits or planning without statistics. Not retried: nothing else may
   * use the table meanwhile.
   */
  public void load(int branches, int customersPerBranch, long openingBalance,
      LongConsumer progress) {
    Objects.requireNonNull(progress, "progress");
    if (branches < 1 || customersPerBranch < 1 || openingBalance < 0) {
      throw new IllegalArgumentException("at least one branch and one customer per branch, and a"
          + " non-negative opening balance, are required");
    }
    long rows = Math.multiplyExact((long) branches, customersPerBranch);
    try (Connection connection = pool.getConnection()) {
      try (Statement statement = connection.createStatement()) {
        statement.execute("DROP TABLE IF EXISTS " + TABLE);
        statement.execute(CREATE_TABLE.formatted(""));
      }
      connection.commit();
      CopyManager copy = connection.unwrap(PGConnection.class).getCopyAPI();
      StringBuilder batch = new StringBuilder();
      for (long done = 0; done < rows; ) {
        long end = Math.min(rows, done + LOAD_BATCH_ROWS);
        batch.setLength(0);
        for (long row = done; row < end; row++) {
          batch.append(row / customersPerBranch).append('\t')
              .append(row % customersPerBranch).append('\t')
              .append(openingBalance).append('\t')
              .append(openingBalance).append('\n');
        }
        copy.copyIn("COPY " + TABLE + " (branch, customer, checking, savings) FROM STDIN",
            new StringReader(batch.toString()));
        connection.commit();
        done = end;
        progress.accept(done);
      }
      // VACUUM cannot run inside a transaction block; the pool restores autocommit on return.
      connection.setAutoCommit(true);
      try (Statement statement = connection.createStatement()) {
        statement.execute("VACUUM (ANALYZE) " + TABLE);
      }
    } catch (SQLException e) {
      throw PostgresSupport.unavailable("PostgreSQL failed to load SmallBank", e);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot stream rows to COPY", e);
    }
  }

  /** The customer's checking plus savings, read in a read-only transaction. */
  public long balance(Customer customer) {
    Objects.requireNonNull(customer, "customer");
    return execute("balance", true, connection -> {
      try (PreparedStatement statement = connection.prepareStatement("""
          SELECT checking + savings FROM smallbank_accounts
          WHERE branch = ? AND customer = ?""")) {
        statement.setInt(1, customer.branch());
        statement.setInt(2, customer.index());
        try (ResultSet row = statement.executeQuery()) {
          if (!row.next()) {
            throw noCustomer(customer);
          }
          return row.getLong(1);
        }
      }
    });
  }

  /** Adds {@code amount} (> 0) to the customer's checking. Always committed. */
  public Outcome depositChecking(Customer customer, long amount) {
    Objects.requireNonNull(customer, "customer");
    requirePositive(amount);
    return execute("depositChecking", false, connection -> {
      // One statement says it all; an application would not read the balance first.
      try (PreparedStatement statement = connection.prepareStatement("""
          UPDATE smallbank_accounts SET checking = checking + ?
          WHERE branch = ? AND customer = ?""")) {
        statement.setLong(1, amount);
        statement.setInt(2, customer.branch());
        statement.setInt(3, customer.index());
        if (statement.executeUpdate() == 0) {
          throw noCustomer(customer);
        }
      }
      return Outcome.COMMITTED;
    });
  }

  /**
   * Adds {@code amount} to the customer's savings; {@code amount} may be negative (a withdrawal).
   * {@code REJECTED} if savings would go below zero.
   */
  public Outcome transactSavings(Customer customer, long amount) {
    Objects.requireNonNull(customer, "customer");
    return execute("transactSavings", false, connection -> {
      Account account = read(connection, List.of(customer)).get(customer);
      long savings = Math.addExact(account.savings(), amount);
      if (savings < 0) {
        return Outcome.REJECTED;
      }
      write(connection, Map.of(customer, new Account(account.checking(), savings)));
      return Outcome.COMMITTED;
    });
  }

  /**
   * Moves all of {@code from}'s money (checking and savings) into {@code to}'s checking; {@code
   * from} and {@code to} must differ. Always committed.
   */
  public Outcome amalgamate(Customer from, Customer to) {
    requireDistinct(from, to);
    return execute("amalgamate", false, connection -> {
      Map<Customer, Account> accounts = read(connection, List.of(from, to));
      Account source = accounts.get(from);
      Account destination = accounts.get(to);
      long total = Math.addExact(source.checking(), source.savings());
      write(connection, Map.of(
          from, new Account(0, 0),
          to, new Account(Math.addExact(destination.checking(), total), destination.savings())));
      return Outcome.COMMITTED;
    });
  }

  /**
   * Cashes a check of {@code amount} (> 0) against the customer's checking. If checking plus
   * savings is below {@code amount} the check still clears, overdrawing checking, with a penalty
   * of one. Always committed.
   *
   * @return the amount debited from checking: {@code amount}, or {@code amount + 1} with the
   *     penalty
   */
  public long writeCheck(Customer customer, long amount) {
    Objects.requireNonNull(customer, "customer");
    requirePositive(amount);
    return execute("writeCheck", false, connection -> {
      Account account = read(connection, List.of(customer)).get(customer);
      long debit = Math.addExact(account.checking(), account.savings()) < amount
          ? Math.addExact(amount, 1)
          : amount;
      write(connection, Map.of(customer,
          new Account(Math.subtractExact(account.checking(), debit), account.savings())));
      return debit;
    });
  }

  /**
   * Moves {@code amount} (> 0) from {@code from}'s checking to {@code to}'s checking; {@code from}
   * and {@code to} must differ. {@code REJECTED} if {@code from}'s checking is below {@code
   * amount} (savings do not cover a payment).
   */
  public Outcome sendPayment(Customer from, Customer to, long amount) {
    requireDistinct(from, to);
    requirePositive(amount);
    return execute("sendPayment", false, connection -> {
      Map<Customer, Account> accounts = read(connection, List.of(from, to));
      Account source = accounts.get(from);
      Account destination = accounts.get(to);
      if (source.checking() < amount) {
        return Outcome.REJECTED;
      }
      write(connection, Map.of(
          from, new Account(source.checking() - amount, source.savings()),
          to, new Account(Math.addExact(destination.checking(), amount), destination.savings())));
      return Outcome.COMMITTED;
    });
  }

  /**
   * Snapper's MultiTransfer: every source pays {@code amount} (> 0) from its checking to every
   * destination's checking. So each source's checking is debited {@code amount *
   * destinations.size()} and each destination's checking credited {@code amount *
   * sources.size()}, which conserves money exactly. {@code REJECTED}, changing nothing, if any
   * source's checking is below its debit.
   *
   * @param sources at least one customer, without duplicates
   * @param destinations at least one customer, without duplicates, none of them a source
   */
  public Outcome multiTransfer(List<Customer> sources, List<Customer> destinations, long amount) {
    Objects.requireNonNull(sources, "sources");
    Objects.requireNonNull(destinations, "destinations");
    if (sources.isEmpty() || destinations.isEmpty()) {
      throw new IllegalArgumentException("at least one source and one destination are required");
    }
    requirePositive(amount);
    Set<Customer> seen = new HashSet<>();
    for (Customer customer : sources) {
      if (!seen.add(Objects.requireNonNull(customer, "source"))) {
        throw new IllegalArgumentException("source " + customer + " appears twice");
      }
    }
    for (Customer customer : destinations) {
      if (!seen.add(Objects.requireNonNull(customer, "destination"))) {
        throw new IllegalArgumentException("destination " + customer
            + (sources.contains(customer) ? " is also a source" : " appears twice"));
      }
    }
    long debit;
    long credit;
    try {
      debit = Math.multiplyExact(amount, destinations.size());
      credit = Math.multiplyExact(amount, sources.size());
    } catch (ArithmeticException e) {
      throw new IllegalArgumentException("amount " + amount + " overflows when multiplied by the"
          + " number of sources or destinations", e);
    }
    List<Customer> everyone = new ArrayList<>(sources);
    everyone.addAll(destinations);
    return execute("multiTransfer", false, connection -> {
      Map<Customer, Account> accounts = read(connection, everyone);
      for (Customer source : sources) {
        if (accounts.get(source).checking() < debit) {
          return Outcome.REJECTED;
        }
      }
      Map<Customer, Account> updated = new HashMap<>();
      for (Customer source : sources) {
        Account account = accounts.get(source);
        updated.put(source, new Account(account.checking() - debit, account.savings()));
      }
      for (Customer destination : destinations) {
        Account account = accounts.get(destination);
        updated.put(destination,
            new Account(Math.addExact(account.checking(), credit), account.savings()));
      }
      write(connection, updated);
      return Outcome.COMMITTED;
    });
  }

  /** The sum of checking and savings over all customers, read in one read-only transaction. */
  public long totalMoney() {
    return execute("totalMoney", true, connection -> {
      // Sums of bigint are numeric in PostgreSQL, so no row's checking + savings can overflow.
      try (PreparedStatement statement = connection.prepareStatement("""
          SELECT coalesce(sum(checking), 0) + coalesce(sum(savings), 0)
          FROM smallbank_accounts""");
          ResultSet row = statement.executeQuery()) {
        row.next();
        return row.getLong(1);
      }
    });
  }

  /** Serialization failures ({@code 40001}) and deadlocks ({@code 40P01}) retried since opening. */
  public long serializationRetries() {
    return retries.sum();
  }

  @Override
  public void close() {
    pool.close();
  }

  /** The customers' accounts, read with one statement; every customer must exist. */
  private static Map<Customer, Account> read(Connection connection, List<Customer> customers)
      throws SQLException {
    String keys = String.join(", ", Collections.nCopies(customers.size(), "(?, ?)"));
    Map<Customer, Account> accounts = new java.util.HashMap<>();
    try (PreparedStatement statement = connection.prepareStatement(
        "SELECT branch, customer, checking, savings FROM smallbank_accounts"
            + " WHERE (branch, customer) IN (" + keys + ")")) {
      int parameter = 1;
      for (Customer customer : customers) {
        statement.setInt(parameter++, customer.branch());
        statement.setInt(parameter++, customer.index());
      }
      try (ResultSet row = statement.executeQuery()) {
        while (row.next()) {
          accounts.put(new Customer(row.getInt(1), row.getInt(2)),
              new Account(row.getLong(3), row.getLong(4)));
        }
      }
    }
    for (Customer customer : customers) {
      if (!accounts.containsKey(customer)) {
        throw noCustomer(customer);
      }
    }
    return accounts;
  }

  /**
   * Writes the new balances in one batch, in (branch, customer) order so that transactions over
   * the same customers take their row locks in the same order and do not deadlock.
   */
  private static void write(Connection connection, Map<Customer, Account> accounts)
      throws SQLException {
    Map<Customer, Account> ordered = new TreeMap<>(KEY_ORDER);
    ordered.putAll(accounts);
    try (PreparedStatement statement = connection.prepareStatement(UPDATE_ACCOUNT)) {
      for (Map.Entry<Customer, Account> entry : ordered.entrySet()) {
        statement.setLong(1, entry.getValue().checking());
        statement.setLong(2, entry.getValue().savings());
        statement.setInt(3, entry.getKey().branch());
        statement.setInt(4, entry.getKey().index());
        statement.addBatch();
      }
      for (int updated : statement.executeBatch()) {
        // The rows were just read in this SERIALIZABLE transaction and are never deleted
        // concurrently (only load drops the table), so a miss means the table was replaced.
        if (updated != 1) {
          throw new IllegalStateException("an account read in this transaction has vanished");
        }
      }
    }
  }

  private interface TransactionBody<T> {
    T run(Connection connection) throws SQLException;
  }

  /**
   * Runs {@code body} as one SERIALIZABLE transaction and commits it, re-running it from the start
   * after a serialization failure or deadlock. An exception from {@code body} rolls back.
   */
  private <T> T execute(String operation, boolean readOnly, TransactionBody<T> body) {
    return PostgresSupport.retrying(maxRetries, retries, "PostgreSQL failed " + operation,
        (attempts, last) -> new RetriesExhaustedException("PostgreSQL could not serialize "
            + operation + " in " + attempts + (attempts == 1 ? " attempt" : " attempts")
            + " (last SQLSTATE " + last.getSQLState() + "); nothing was changed"),
        () -> {
          try (Connection connection = pool.getConnection()) {
            if (readOnly) {
              // The driver then begins a READ ONLY transaction; the pool resets the flag on
              // return.
              connection.setReadOnly(true);
            }
            T result;
            try {
              result = body.run(connection);
            } catch (SQLException | RuntimeException e) {
              rollBack(connection, e);
              throw e;
            }
            commit(connection, operation);
            return result;
          }
        });
  }

  /**
   * Commits; a serialization failure at commit is thrown for a retry (PostgreSQL rolled back),
   * but any other failure leaves the outcome unknown: the commit may have reached the disk.
   */
  private static void commit(Connection connection, String operation) throws SQLException {
    try {
      connection.commit();
    } catch (SQLException e) {
      if (PostgresSupport.retryable(e)) {
        throw e;
      }
      throw new TroupeException(ErrorCode.OUTCOME_UNKNOWN, "PostgreSQL failed to commit "
          + operation + ", which may or may not have taken effect: " + e.getMessage()
          + " (SQLSTATE " + e.getSQLState() + ")");
    }
  }

  private static void rollBack(Connection connection, Exception cause) {
    try {
      connection.rollback();
    } catch (SQLException e) {
      // The connection is likely broken; the pool evicts it, and PostgreSQL aborts the
      // transaction when the session ends. The original failure is the one to report.
      cause.addSuppressed(e);
    }
  }


  private static void requirePositive(long amount) {
    if (amount <= 0) {
      throw new IllegalArgumentException("amount must be > 0: " + amount);
    }
  }

  private static void requireDistinct(Customer from, Customer to) {
    Objects.requireNonNull(from, "from");
    Objects.requireNonNull(to, "to");
    if (from.equals(to)) {
      throw new IllegalArgumentException("from and to are the same customer " + from);
    }
  }

  private static IllegalArgumentException noCustomer(Customer customer) {
    return new IllegalArgumentException("no customer " + customer);
  }
}
