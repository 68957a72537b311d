package dev.troupe.model.spec;

import dev.troupe.model.Operation;
import java.util.List;
import java.util.Objects;

/**
 * What invoking an action on an entity state yields: the operations to commit, or the
 * precondition that stopped it. Nothing has been applied either way; the caller commits
 * {@link Applied#operations()} as one atomic record, or reports the failure (HTTP 409).
 */
public sealed interface ActionOutcome {
  /**
   * All preconditions held; committing these operations performs the action's effects. The list
   * may be empty (an action with only preconditions, or effects that change nothing).
   */
  record Applied(List<Operation> operations) implements ActionOutcome {
    public Applied {
      operations = List.copyOf(operations);
    }
  }

  /**
   * A precondition did not hold, or could not be evaluated in this state.
   *
   * @param precondition the expression text as declared
   * @param message a sentence for the client, naming the type, action and expression, and the
   *     evaluation error if there was one
   */
  record PreconditionFailed(String precondition, String message) implements ActionOutcome {
    public PreconditionFailed {
      Objects.requireNonNull(precondition, "precondition");
      Objects.requireNonNull(message, "message");
    }
  }
}
