package dev.troupe.server.replication;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The puller's backoff: doubling from the initial wait, capped, and no overflow however long. */
class ReplicationPullerTest {
  @Test
  void backoffDoublesUpToTheMaximum() {
    assertEquals(100, ReplicationPuller.backoffMillis(1, 100, 5_000));
    assertEquals(200, ReplicationPuller.backoffMillis(2, 100, 5_000));
    assertEquals(3_200, ReplicationPuller.backoffMillis(6, 100, 5_000));
    assertEquals(5_000, ReplicationPuller.backoffMillis(7, 100, 5_000));
    assertEquals(5_000, ReplicationPuller.backoffMillis(Long.MAX_VALUE, 100, 5_000));
    assertEquals(70, ReplicationPuller.backoffMillis(3, 70, 70));
  }
}
