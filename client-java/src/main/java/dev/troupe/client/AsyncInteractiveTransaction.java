package dev.troupe.client;

import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * An open interactive transaction of the {@link AsyncTroupeClient}: as {@link
 * InteractiveTransaction}, with futures. Chain its steps (each after the previous completes) and
 * end it with {@link #commit()} or {@link #abort()}.
 */
public final class AsyncInteractiveTransaction {
  private final ClientCore core;
  private final long txId;

  AsyncInteractiveTransaction(ClientCore core, long txId) {
    this.core = core;
    this.txId = txId;
  }

  /** The transaction's id. */
  public long txId() {
    return txId;
  }

  /** As {@link InteractiveTransaction#read(String)}, as a future. */
  public CompletableFuture<EntityState> read(String entity) {
    return core.runAsync(Calls.stepRead(txId, entity));
  }

  /** As {@link InteractiveTransaction#write(Operation)}, as a future. */
  public CompletableFuture<EntityState> write(Operation operation) {
    return core.runAsync(Calls.stepWrite(txId, operation));
  }

  /** As {@link InteractiveTransaction#act(String,String,Map)}, as a future. */
  public CompletableFuture<EntityState> act(String entity, String action, Map<String, ?> args) {
    return core.runAsync(Calls.stepAct(txId, entity, action, args));
  }

  /** As {@link InteractiveTransaction#commit()}, as a future. */
  public CompletableFuture<TransactionResult> commit() {
    return core.runAsync(Calls.commit(txId));
  }

  /** As {@link InteractiveTransaction#abort()}, as a future. */
  public CompletableFuture<Void> abort() {
    return core.runAsync(Calls.abort(txId));
  }
}
