package dev.troupe.sim;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.value.RegisterValue;
import dev.troupe.txn.coordinator.CoordinatorCore;
import dev.troupe.txn.Turn;
import dev.troupe.txn.check.RecordedTransaction;
import dev.troupe.txn.check.RegisterChecker;
import dev.troupe.txn.check.SerializabilityChecker;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The register workload of a {@link Simulation}: read-write registers holding unique values, so
 * that a read's version is identified by the value it returns rather than by a version the node
 * reports. Each register is one member of the {@code current} key family of an entity ({@link
 * #MEMBERS} per entity); the {@code write} action sets it and, under the same lock, appends the
 * value to the register's log (the {@code history} member), which is the version order the check
 * reads off the data; the {@code read} action (no effect) reads it. Under {@code keys} admission
 * each action locks only its register's members, so registers of one entity are read and written
 * concurrently. Clients run transactions over one to three registers, each read or written, as
 * multi-entity transactions (planned or dynamic, as the run says), and single writes as
 * single-entity turns.
 *
 * <p>Under {@code psac} and {@code serial} a read is a whole-state read of the part (under psac a
 * read-only action is admitted beside in-flight writes and may observe half of one, see
 * {@link ListAppendWorkload}); the check is the same under every policy.
 *
 * <p><b>Checked after the run</b> by {@link RegisterChecker} against the registers' durable
 * values and logs: every current value is its log's last, no write lost, duplicated, aborted or
 * applied in part, and no cycle in the serialization graph built from the values read.
 */
final class RegisterWorkload implements Workload {
  static final String REGISTER_SPEC = """
      type: Register
      %s
      keys:
        current: {kind: register, family: true}
        history: {kind: register, family: true}
      actions:
        write: {params: {key: string, element: string},
                members: {current: "current[key]", history: "history[key]"},
                effect: {current: "element",
                         history: "(history == null ? [] : history) + [element]"}}
        read:  {params: {key: string}, members: {current: "current[key]"},
                pre: ["current == null || current != ''"]}
      """;

  /** Registers per entity. */
  static final List<String> MEMBERS = List.of("x", "y");

  /** One request: its operations and, once committed, the values its reads returned. */
  private static final class RegisterTransaction extends ClientCall {
    final List<RegisterChecker.Operation> planned;
    final Map<String, String> observed = new LinkedHashMap<>();

    RegisterTransaction(String id, long issuedMillis, Runnable next,
        List<RegisterChecker.Operation> planned) {
      super(id, issuedMillis, next);
      this.planned = planned;
    }
  }

  private final Simulation simulation;
  private final Simulation.Options options;
  private final Scheduler scheduler;
  private final CompiledType registerType;
  private final List<RegisterTransaction> transactions = new ArrayList<>();
  private int serializationEdges;

  RegisterWorkload(Simulation simulation) {
    this.simulation = simulation;
    this.options = simulation.options;
    this.scheduler = simulation.scheduler;
    this.registerType = CompiledType.compile(SpecParser.parse("Register",
        REGISTER_SPEC.formatted(options.admissionSpec()).getBytes(StandardCharsets.UTF_8), true));
  }

  @Override
  public Map<String, CompiledType> types() {
    return Map.of("Register", registerType);
  }

  @Override
  public void preload() {
    // Registers start empty: nothing to write.
  }

  @Override
  public Iterable<? extends ClientCall> calls() {
    return transactions;
  }

  @Override
  public int serializationEdges() {
    return serializationEdges;
  }

  @Override
  public ClientCall issue(String client, int sequence, Runnable next) {
    var random = scheduler.random();
    String id = "register-" + client + "-" + sequence;
    TransactionShape shape = TransactionShape.draw(random, allRegisters());
    List<String> chosen = shape.chosen();
    boolean single = shape.single();
    int width = shape.width();
    List<RegisterChecker.Operation> operations = new ArrayList<>();
    for (int index = 0; index < width; index++) {
      String register = chosen.get(index);
      operations.add(!single && random.nextBoolean()
          ? new RegisterChecker.Operation.Read(register, null)
          : new RegisterChecker.Operation.Write(register,
              client.substring("client-".length()) + "." + sequence + "." + index));
    }
    RegisterTransaction transaction =
        new RegisterTransaction(id, scheduler.nowMillis(), next, operations);
    transactions.add(transaction);
    simulation.toNode(client, "register transaction " + id, node -> {
      if (single) {
        RegisterChecker.Operation.Write write = (RegisterChecker.Operation.Write) operations.get(0);
        node.turn(id, entity(write.register()), writeTurn(write),
            result -> answer(client, transaction, ClientCall.Outcome.of(result)));
        return;
      }
      node.transact(id, parts(operations), options.planned(), outcome -> {
        if (outcome instanceof CoordinatorCore.Outcome.Committed committed) {
          // Only the registers it read: the state's other members were not locked by it.
          for (RegisterChecker.Operation operation : operations) {
            if (operation instanceof RegisterChecker.Operation.Read read) {
              transaction.observed.put(read.register(), value(
                  committed.results().get(entity(read.register())).state(),
                  "current", read.register()));
            }
          }
        }
        answer(client, transaction, ClientCall.Outcome.of(outcome));
      });
    });
    return transaction;
  }

  private void answer(String client, RegisterTransaction transaction, ClientCall.Outcome outcome) {
    simulation.toClient(client, "answer " + transaction.id, () -> transaction.decide(outcome));
  }

  /** Per entity: its reads and writes in order (reads of the whole state unless keys). */
  private Map<EntityId, CoordinatorCore.Part> parts(List<RegisterChecker.Operation> operations) {
    boolean memberReads = options.admission().equals("keys");
    Map<EntityId, List<Turn>> turns = new LinkedHashMap<>();
    Map<EntityId, Boolean> readsState = new LinkedHashMap<>();
    for (RegisterChecker.Operation operation : operations) {
      EntityId entity = entity(operation.register());
      List<Turn> entityTurns = turns.computeIfAbsent(entity, ignored -> new ArrayList<>());
      switch (operation) {
        case RegisterChecker.Operation.Write write -> entityTurns.add(writeTurn(write));
        case RegisterChecker.Operation.Read read when memberReads -> {
          ObjectNode params = Json.NODES.objectNode();
          params.put("key", member(read.register()));
          entityTurns.add(new Turn.InvokeAction("read", params));
        }
        case RegisterChecker.Operation.Read read -> readsState.put(entity, true);
      }
    }
    Map<EntityId, CoordinatorCore.Part> parts = new LinkedHashMap<>();
    turns.forEach((entity, list) -> parts.put(entity,
        new CoordinatorCore.Part(list, readsState.getOrDefault(entity, false))));
    return parts;
  }

  private static Turn writeTurn(RegisterChecker.Operation.Write write) {
    ObjectNode params = Json.NODES.objectNode();
    params.put("key", member(write.register()));
    params.put("element", write.value());
    return new Turn.InvokeAction("write", params);
  }

  @Override
  public String check() {
    Map<String, RegisterChecker.FinalRegister> registers = new LinkedHashMap<>();
    // A register whose entity's final read answered corrupt_data (damage) is left out of the
    // history entirely: neither its value nor its log can be read.
    Set<String> unreadable = new HashSet<>();
    for (String register : allRegisters()) {
      EntityState state = simulation.cluster.finalState(entity(register));
      if (state == null) {
        unreadable.add(register);
        continue;
      }
      List<String> log = new ArrayList<>();
      if (state.get("history[" + member(register) + "]") instanceof RegisterValue history) {
        for (JsonNode element : history.value()) {
          log.add(element.asText());
        }
      }
      registers.put(register, new RegisterChecker.FinalRegister(
          value(state, "current", register), log));
    }
    List<RegisterChecker.Transaction> history = new ArrayList<>();
    for (RegisterTransaction transaction : transactions) {
      RecordedTransaction.Outcome outcome = transaction.outcome().recorded();
      List<RegisterChecker.Operation> operations = new ArrayList<>();
      for (RegisterChecker.Operation operation : transaction.planned) {
        if (unreadable.contains(operation.register())) {
          continue;
        }
        if (operation instanceof RegisterChecker.Operation.Read read) {
          // What a read returned is known only when the client heard that it committed.
          if (outcome == RecordedTransaction.Outcome.COMMITTED) {
            operations.add(new RegisterChecker.Operation.Read(read.register(),
                transaction.observed.get(read.register())));
          }
        } else {
          operations.add(operation);
        }
      }
      history.add(new RegisterChecker.Transaction(transaction.id, outcome, operations));
    }
    return switch (RegisterChecker.check(history, registers)) {
      case SerializabilityChecker.Serializable serializable -> {
        serializationEdges = serializable.edges();
        yield null;
      }
      case SerializabilityChecker.Violation violation -> "registers: " + violation.kind()
          + ": " + violation.explanation();
    };
  }

  /** A register's value ({@code family} member) in its entity's state, or null. */
  private static String value(EntityState state, String family, String register) {
    return state.get(family + "[" + member(register) + "]") instanceof RegisterValue value
        && !value.value().isNull() ? value.value().asText() : null;
  }

  /** Every register, named {@code entity.member}: {@code lists} entities of {@link #MEMBERS}. */
  private List<String> allRegisters() {
    List<String> names = new ArrayList<>();
    for (int entity = 0; entity < options.lists(); entity++) {
      for (String member : MEMBERS) {
        names.add("r" + entity + "." + member);
      }
    }
    return names;
  }

  private static EntityId entity(String register) {
    return new EntityId("Register", register.substring(0, register.indexOf('.')));
  }

  private static String member(String register) {
    return register.substring(register.indexOf('.') + 1);
  }
}
