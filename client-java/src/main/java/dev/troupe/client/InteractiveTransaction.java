package dev.troupe.client;

import java.util.Map;
import java.util.Optional;

/**
 * An open interactive transaction ({@link TroupeClient#begin()}): steps that see the
 * transaction's own writes, then one {@link #commit()}. Closing it aborts it unless it was
 * committed or aborted, so with try-with-resources a block that throws (or forgets to commit)
 * changes nothing. A failed step changes nothing and leaves the transaction open; the server ends
 * a transaction left idle after its idle timeout.
 *
 * <p>Steps are not retried once sent (an increment sent twice would count twice), except reads;
 * the commit is, with its idempotency key.
 *
 * <p>Concurrency: one thread at a time; steps are sequential.
 */
public final class InteractiveTransaction implements AutoCloseable {
  private final ClientCore core;
  private final long txId;
  private boolean ended;
  private TransactionResult result;

  InteractiveTransaction(ClientCore core, long txId) {
    this.core = core;
    this.txId = txId;
  }

  /** The transaction's id. */
  public long txId() {
    return txId;
  }

  /** The entity ({@code Type/id}) as the transaction sees it. */
  public EntityState read(String entity) {
    return core.run(Calls.stepRead(txId, entity));
  }

  /** A key operation ({@link Operation#assign}, increment, add, remove, deleteKey, delete). */
  public EntityState write(Operation operation) {
    return core.run(Calls.stepWrite(txId, operation));
  }

  /** Runs a declared action on {@code entity} ({@code Type/id}) within the transaction. */
  public EntityState act(String entity, String action, Map<String, ?> args) {
    return core.run(Calls.stepAct(txId, entity, action, args));
  }

  /** Commits: all its writes, or (an exception) none. */
  public TransactionResult commit() {
    ended = true;
    result = core.run(Calls.commit(txId));
    return result;
  }

  /** Aborts: none of its writes take effect. */
  public void abort() {
    ended = true;
    core.run(Calls.abort(txId));
  }

  /** The commit's answer, once committed. */
  public Optional<TransactionResult> result() {
    return Optional.ofNullable(result);
  }

  /** Aborts the transaction unless it was committed or aborted. */
  @Override
  public void close() {
    if (!ended) {
      abort();
    }
  }
}
