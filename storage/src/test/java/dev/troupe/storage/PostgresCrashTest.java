package dev.troupe.storage;

import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.troupe.model.EntityId;
import dev.troupe.model.Operation;
import dev.troupe.storage.postgres.PostgresDisk;
import dev.troupe.storage.postgres.PostgresDiskSettings;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLongArray;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The PostgreSQL server dies under a stream of commits ({@code pg_ctl stop -m immediate}: every
 * server process quits at once, as at a power loss of the database machine, and the next start
 * replays PostgreSQL's write-ahead log). After the restart the store opens again and holds every
 * commit it acknowledged; a commit whose outcome was unknown may or may not be there, nothing
 * else is.
 */
class PostgresCrashTest {
  @RegisterExtension static final TestPostgres postgres = new TestPostgres();

  @TempDir Path directory;


  @Test
  void everyAcknowledgedCommitSurvivesACrashOfTheDatabaseServer() throws Exception {
    PostgresDiskSettings database = postgres.newDatabase();
    StorageSettings settings = Fixtures.settings(directory);
    int entities = 8;
    AtomicLongArray acknowledged = new AtomicLongArray(entities);
    AtomicLongArray attempted = new AtomicLongArray(entities);
    AtomicBoolean stop = new AtomicBoolean();
    RocksStore store = RocksStore.open(settings, System::currentTimeMillis,
        PostgresDisk.open(database), RocksStore.Execution.THREADS);
    List<Thread> clients = new ArrayList<>();
    for (int c = 0; c < 4; c++) {
      int client = c;
      Thread thread = new Thread(() -> {
        for (int i = 0; !stop.get(); i++) {
          int e = (client + i) % entities;
          EntityId entity = new EntityId("Counter", "c" + e);
          attempted.incrementAndGet(e);
          try {
            store.commit(store.newTransactionId(),
                List.of(Fixtures.write(entity, new Operation.Increment("n", 1)))).join();
            acknowledged.incrementAndGet(e);
          } catch (RuntimeException failed) {
            // Refused or of unknown outcome once the database is gone: not acknowledged.
            if (stop.get()) {
              return;
            }
          }
        }
      }, "crash-client-" + c);
      clients.add(thread);
      thread.start();
    }
    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
    while (sum(acknowledged) < 300 && System.nanoTime() < deadline) {
      Thread.sleep(20);
    }
    postgres.server().crash();
    long acknowledgedAtCrash = sum(acknowledged);
    Thread.sleep(200);
    stop.set(true);
    for (Thread thread : clients) {
      thread.join(TimeUnit.SECONDS.toMillis(60));
    }
    store.close();
    assertTrue(acknowledgedAtCrash >= 300, "commits flowed before the crash: " + acknowledgedAtCrash);

    postgres.server().restart();
    try (RocksStore reopened = RocksStore.open(settings, System::currentTimeMillis,
        PostgresDisk.open(database), RocksStore.Execution.THREADS)) {
      for (int e = 0; e < entities; e++) {
        long value = Fixtures.counter(reopened.read(new EntityId("Counter", "c" + e)), "n");
        assertTrue(value >= acknowledged.get(e),
            "entity " + e + ": " + acknowledged.get(e) + " acknowledged, " + value + " found");
        assertTrue(value <= attempted.get(e),
            "entity " + e + ": " + attempted.get(e) + " attempted, " + value + " found");
      }
      // And the store goes on committing.
      reopened.commit(reopened.newTransactionId(), List.of(Fixtures.write(
          new EntityId("Counter", "c0"), new Operation.Increment("n", 1)))).join();
    }
  }

  private static long sum(AtomicLongArray values) {
    long total = 0;
    for (int i = 0; i < values.length(); i++) {
      total += values.get(i);
    }
    return total;
  }
}
