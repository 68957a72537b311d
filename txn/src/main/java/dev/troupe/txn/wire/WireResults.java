package dev.troupe.txn.wire;

import dev.troupe.model.TroupeException;
import dev.troupe.txn.DependencyEvaluator;
import dev.troupe.txn.TurnResult;

/**
 * Converts between a core's {@link TurnResult} and its wire form {@link WireResult}. Lossless for
 * what the cores read: a failure keeps its code, reason and message, but not the exception's
 * class or stack (a subclass arrives as a plain {@link TroupeException}).
 */
public final class WireResults {
  private WireResults() {}

  public static WireResult toWire(TurnResult result) {
    return switch (result) {
      case TurnResult.Done done -> new WireResult.Done(done.version(), done.state(), done.wrote(),
          done.readVersion(), done.forwarding().forwards(), done.forwarding().deepestUpstream(),
          done.forwarding().deepestDownstream());
      case TurnResult.Failed failed -> new WireResult.Failed(failed.error().code(),
          failed.error().reason(), failed.error().getMessage());
    };
  }

  public static TurnResult fromWire(WireResult result) {
    return switch (result) {
      case WireResult.Done done -> new TurnResult.Done(done.version(), done.state(), done.wrote(),
          done.readVersion(), done.forwards().isEmpty() && done.deepestUpstream().isEmpty()
              && done.deepestDownstream().isEmpty()
              ? DependencyEvaluator.Forwarding.NONE
              : new DependencyEvaluator.Forwarding(done.forwards(), done.deepestUpstream(),
                  done.deepestDownstream()));
      case WireResult.Failed failed ->
          new TurnResult.Failed(new TroupeException(failed.code(), failed.reason(),
              failed.message()));
    };
  }
}
