package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The SmallBank generator: skew, mix, MultiTransfer's shape, and determinism by seed. */
class SmallBankWorkloadTest {
  private static final SmallBankWorkload.Shape SHAPE =
      new SmallBankWorkload.Shape(1000, 100, 0.01, 1, 2);

  @Test
  void threeQuartersOfPicksFallOnTheHotShare() {
    SmallBankWorkload workload =
        new SmallBankWorkload(SHAPE, SmallBankWorkload.Mix.SMALLBANK, 7);
    int hot = 0;
    int picks = 100_000;
    for (int i = 0; i < picks; i++) {
      if (workload.pick(1000, 0.01) < 10) {
        hot++;
      }
    }
    assertEquals(0.75, (double) hot / picks, 0.01);
    // A share of 1 is uniform: the first 1% gets about 1% of the picks.
    int first = 0;
    for (int i = 0; i < picks; i++) {
      if (workload.pick(1000, 1) < 10) {
        first++;
      }
    }
    assertEquals(0.01, (double) first / picks, 0.003);
  }

  @Test
  void theClassicMixHasItsSixTransactionsInTheirShares() {
    SmallBankWorkload workload =
        new SmallBankWorkload(SHAPE, SmallBankWorkload.Mix.SMALLBANK, 3);
    Map<String, Integer> counts = new HashMap<>();
    int total = 100_000;
    for (int i = 0; i < total; i++) {
      SmallBankWorkload.Transaction transaction = workload.next();
      counts.merge(transaction.name(), 1, Integer::sum);
      switch (transaction) {
        case SmallBankWorkload.SendPayment payment ->
            assertNotEquals(payment.from(), payment.to());
        case SmallBankWorkload.Amalgamate amalgamate ->
            assertNotEquals(amalgamate.from(), amalgamate.to());
        default -> {}
      }
    }
    Map<String, Double> expected = Map.of("Amalgamate", 0.15, "Balance", 0.15,
        "DepositChecking", 0.15, "SendPayment", 0.25, "TransactSavings", 0.15, "WriteCheck", 0.15);
    assertEquals(expected.keySet(), counts.keySet());
    expected.forEach((name, share) ->
        assertEquals(share, counts.get(name) / (double) total, 0.01, name));
  }

  @Test
  void aMultiTransferTouchesFourBranchesAndItsSizeInDistinctCustomersOnEach() {
    SmallBankWorkload workload =
        new SmallBankWorkload(SHAPE, SmallBankWorkload.Mix.MULTITRANSFER, 11);
    for (int i = 0; i < 1_000; i++) {
      SmallBankWorkload.MultiTransfer transfer =
          (SmallBankWorkload.MultiTransfer) workload.next();
      assertEquals(2, transfer.sources().size());
      assertEquals(6, transfer.destinations().size());
      Set<Integer> branches = new HashSet<>();
      Set<SmallBankWorkload.Customer> customers = new HashSet<>();
      for (SmallBankWorkload.Customer customer : transfer.sources()) {
        branches.add(customer.branch());
        customers.add(customer);
      }
      assertEquals(1, branches.size(), "sources share one branch");
      for (SmallBankWorkload.Customer customer : transfer.destinations()) {
        branches.add(customer.branch());
        customers.add(customer);
      }
      assertEquals(4, branches.size());
      assertEquals(8, customers.size());
      // Money is conserved: debits equal credits.
      assertEquals(transfer.debitPerSource() * 2, transfer.creditPerDestination() * 6);
    }
  }

  @Test
  void theSameSeedGivesTheSameSequence() {
    List<SmallBankWorkload.Transaction> first = sequence(42);
    assertEquals(first, sequence(42));
    assertNotEquals(first, sequence(43));
  }

  private static List<SmallBankWorkload.Transaction> sequence(long seed) {
    SmallBankWorkload workload =
        new SmallBankWorkload(SHAPE, SmallBankWorkload.Mix.SMALLBANK, seed);
    return java.util.stream.Stream.generate(workload::next).limit(200).toList();
  }

  @Test
  void badShapesAreRefused() {
    for (Runnable bad : List.<Runnable>of(
        () -> new SmallBankWorkload.Shape(3, 100, 1, 1, 1),
        () -> new SmallBankWorkload.Shape(10, 1, 1, 1, 1),
        () -> new SmallBankWorkload.Shape(10, 10, 0, 1, 1),
        () -> new SmallBankWorkload.Shape(10, 10, 1, 1.5, 1),
        () -> new SmallBankWorkload.Shape(10, 10, 1, 1, 11))) {
      try {
        bad.run();
        throw new AssertionError("accepted a bad shape");
      } catch (IllegalArgumentException expected) {
        assertTrue(!expected.getMessage().isEmpty());
      }
    }
  }
}
