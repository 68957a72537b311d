package dev.troupe.sim.geo;

import dev.troupe.model.causal.DataCentreIds;
import dev.troupe.model.causal.DependencyVector;
import dev.troupe.model.causal.ReplicationBatch;
import dev.troupe.replication.PullRequest;
import dev.troupe.replication.ReceiverCore;
import dev.troupe.replication.ReceiverCore.Effect;
import dev.troupe.replication.ReceiverCore.Input;
import dev.troupe.sim.Scheduler;
import dev.troupe.sim.SimulatedNetwork;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Several simulated data centres (DCs) replicating to each other under one seeded {@link
 * Scheduler}: the shell around each DC's production {@link ReceiverCore}, as the runtime's
 * replication shell is. Each DC pulls every origin's log entries from its peers (the core plans
 * which pulls go where, forwarding included), hands what arrives to the core, and performs its
 * effects: appends batches durably (a moment later; a crash before loses them), publishes the
 * applying vector, applies remote transactions (a moment later, atomically), records the applied
 * vector and truncates the log. The core is ticked at every pull interval. Between DCs, a {@link SimulatedNetwork} delays, loses, duplicates and reorders messages,
 * and partitions cut chosen pairs of DCs (or one DC from all) for a while; DCs crash and restart
 * from their durable state. Faults stop at {@link #heal}.
 *
 * <p>Messages of a pull: the request carries the puller's received vector (the server's receiver
 * learns the stable vector from it) and the origin and timestamp to read after; the answer carries
 * the batch, that timestamp, and the server's received vector. A pull whose answer is lost is simply
 * planned again at the next interval (pulls are idempotent, duplicates harmless).
 */
final class SimulatedDataCentres {
  private record PullAsked(int pullerIndex, DependencyVector pullerReceived, int originDc,
      long afterTimestamp) {
    @Override
    public String toString() {
      return "pull of " + originDc + " after " + afterTimestamp;
    }
  }

  private record PullAnswer(int serverIndex, long afterTimestamp, ReplicationBatch batch) {
    @Override
    public String toString() {
      return "batch of " + batch.originDc() + " after " + afterTimestamp + ": "
          + batch.entries().size() + " entries up to " + batch.upToTimestamp();
    }
  }

  private final Scheduler scheduler;
  private final GeoOptions options;
  private final SimulatedNetwork network;
  final List<SimulatedDataCentre> dataCentres = new ArrayList<>();
  private final Map<String, Long> cutUntilMillis = new HashMap<>();
  private boolean faulty = true;
  long partitions;
  long pulls;
  /** Pulls of an origin's entries from another peer than the origin (transitive forwarding). */
  long forwardedPulls;
  long batchesAppended;
  long batchesRefused;

  SimulatedDataCentres(Scheduler scheduler, GeoOptions options,
      Function<SimulatedDataCentre, ReceiverCore> receivers) {
    this.scheduler = scheduler;
    this.options = options;
    this.network = new SimulatedNetwork(scheduler, new SimulatedNetwork.Faults(2, 30,
        options.linkLoss(), options.linkDuplication(), true));
    for (int index = 0; index < options.dataCentres(); index++) {
      String name = "dc" + index;
      long skew = options.maxClockSkewMillis() == 0 ? 0
          : scheduler.random().nextLong(-options.maxClockSkewMillis(),
              options.maxClockSkewMillis() + 1);
      // Some DCs share a physical clock exactly, so equal timestamps from two DCs (the register
      // tie-break's case) are common.
      if (index > 0 && scheduler.random().nextInt(3) == 0) {
        skew = dataCentres.get(0).clockOffsetMillis;
      }
      dataCentres.add(new SimulatedDataCentre(name, DataCentreIds.of(name), skew, scheduler,
          receivers));
    }
    for (SimulatedDataCentre dataCentre : dataCentres) {
      recover(dataCentre);
      schedulePulls(dataCentre);
    }
  }

  /** Feeds the core its durable state (at the first start and after every restart). */
  private void recover(SimulatedDataCentre dataCentre) {
    feed(dataCentre, new Input.RecoveredEntries(dataCentre.durableReceived(),
        dataCentre.recordedApplied(), dataCentre.entriesToRefeed()));
  }

  private void feed(SimulatedDataCentre dataCentre, Input input) {
    if (!dataCentre.up()) {
      return;
    }
    perform(dataCentre, dataCentre.receiver().handle(input, dataCentre.physicalMillis()));
  }

  /** Performs the core's effects in order, as the runtime's shell does. */
  private void perform(SimulatedDataCentre dataCentre, List<Effect> effects) {
    int incarnation = dataCentre.incarnation();
    for (Effect effect : effects) {
      switch (effect) {
        case Effect.PersistBatch persist -> scheduler.schedule(
            1 + scheduler.random().nextLong(3), dataCentre.name + " appends " + persist.batch()
                .entries().size() + " entries of " + persist.batch().originDc() + " up to "
                + persist.batch().upToTimestamp(),
            () -> {
              if (dataCentre.incarnation() == incarnation) {
                dataCentre.appendReceived(persist.batch());
                batchesAppended++;
                feed(dataCentre, new Input.BatchPersisted(persist.peerDc(), persist.batch()));
              }
            });
        case Effect.PublishApplyingVector publish -> dataCentre.publishApplying(publish.applying());
        case Effect.Apply apply -> scheduler.schedule(
            1 + scheduler.random().nextLong(3), dataCentre.name + " applies "
                + apply.application().transactions().size() + " of "
                + apply.application().originDc() + "@"
                + apply.application().firstTransactionTimestamp(),
            () -> {
              if (dataCentre.incarnation() == incarnation) {
                dataCentre.applyRemote(apply.application());
                feed(dataCentre, new Input.Applied(apply.application()));
              }
            });
        case Effect.RecordAppliedVector record -> dataCentre.recordApplied(record.applied());
        case Effect.Truncate truncate -> dataCentre.truncate(truncate.below());
        case Effect.BatchRefused refused -> batchesRefused++;
      }
    }
  }

  int[] ids() {
    int[] ids = new int[dataCentres.size()];
    for (int index = 0; index < ids.length; index++) {
      ids[index] = dataCentres.get(index).id;
    }
    return ids;
  }

  private int indexOf(int dataCentreId) {
    for (int index = 0; index < dataCentres.size(); index++) {
      if (dataCentres.get(index).id == dataCentreId) {
        return index;
      }
    }
    throw new IllegalArgumentException("no data centre " + dataCentreId);
  }

  private static String pair(String one, String other) {
    return one.compareTo(other) < 0 ? one + "|" + other : other + "|" + one;
  }

  private boolean cut(String one, String other) {
    Long until = cutUntilMillis.get(pair(one, other));
    return until != null && scheduler.nowMillis() < until;
  }

  private <M> void send(SimulatedDataCentre from, SimulatedDataCentre to, M message,
      java.util.function.Consumer<M> deliver) {
    if (cut(from.name, to.name)) {
      return;
    }
    network.send(from.name, to.name, message, arrived -> {
      if (!cut(from.name, to.name)) {
        deliver.accept(arrived);
      }
    });
  }

  private void schedulePulls(SimulatedDataCentre dataCentre) {
    long delay = options.pullIntervalMillis() / 2
        + scheduler.random().nextLong(options.pullIntervalMillis() + 1);
    scheduler.schedule(delay, dataCentre.name + " pulls", () -> {
      feed(dataCentre, new Input.Tick());
      pullAll(dataCentre);
      schedulePulls(dataCentre);
    });
  }

  private void pullAll(SimulatedDataCentre puller) {
    if (!puller.up()) {
      return;
    }
    int pullerIndex = dataCentres.indexOf(puller);
    for (SimulatedDataCentre server : dataCentres) {
      if (server == puller) {
        continue;
      }
      for (PullRequest pull : puller.receiver().pullsFrom(server.id, puller.physicalMillis())) {
        pulls++;
        if (pull.originDc() != server.id) {
          forwardedPulls++;
        }
        PullAsked request = new PullAsked(pullerIndex, puller.receiver().receivedVector(),
            pull.originDc(), pull.afterTimestamp());
        send(puller, server, request, arrived -> serve(server, arrived));
      }
    }
  }

  private void serve(SimulatedDataCentre server, PullAsked request) {
    if (!server.up()) {
      return;
    }
    SimulatedDataCentre puller = dataCentres.get(request.pullerIndex());
    feed(server, new Input.PeerReported(puller.id, request.pullerReceived()));
    ReplicationBatch batch = server.read(request.originDc(), request.afterTimestamp(),
        options.pullBatchMaxEntries());
    PullAnswer answer = new PullAnswer(dataCentres.indexOf(server), request.afterTimestamp(),
        batch);
    send(server, puller, answer, arrived -> receive(puller, arrived));
  }

  private void receive(SimulatedDataCentre puller, PullAnswer answer) {
    feed(puller, new Input.BatchReceived(dataCentres.get(answer.serverIndex()).id,
        answer.batch()));
  }

  /** Crashes and partitions, drawn from the seed, until {@link #heal}. */
  void scheduleFaults() {
    if (options.crashMeanMillis() > 0) {
      scheduleCrash();
    }
    if (options.partitionMeanMillis() > 0) {
      schedulePartition();
    }
  }

  private long exponential(long meanMillis) {
    return 1 + (long) (-Math.log(1 - scheduler.random().nextDouble()) * meanMillis);
  }

  private void scheduleCrash() {
    scheduler.schedule(exponential(options.crashMeanMillis()), "crash", () -> {
      if (!faulty) {
        return;
      }
      SimulatedDataCentre victim =
          dataCentres.get(scheduler.random().nextInt(dataCentres.size()));
      if (victim.up()) {
        victim.crash();
        scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
            "crash " + victim.name);
        scheduler.schedule(20 + scheduler.random().nextLong(150), "restart " + victim.name,
            () -> restart(victim));
      }
      scheduleCrash();
    });
  }

  private void restart(SimulatedDataCentre dataCentre) {
    dataCentre.restart();
    recover(dataCentre);
  }

  private void schedulePartition() {
    scheduler.schedule(exponential(options.partitionMeanMillis()), "partition", () -> {
      if (!faulty) {
        return;
      }
      partitions++;
      long until = scheduler.nowMillis() + 50 + scheduler.random().nextLong(400);
      SimulatedDataCentre one = dataCentres.get(scheduler.random().nextInt(dataCentres.size()));
      boolean isolate = scheduler.random().nextInt(3) == 0;
      SimulatedDataCentre other =
          dataCentres.get(scheduler.random().nextInt(dataCentres.size()));
      for (SimulatedDataCentre peer : dataCentres) {
        if (peer != one && (isolate || peer == other)) {
          cutUntilMillis.merge(pair(one.name, peer.name), until, Math::max);
          scheduler.trace().record(scheduler.nowMillis(), scheduler.steps(),
              "cut " + one.name + " from " + peer.name + " until " + until);
        }
      }
      schedulePartition();
    });
  }

  /** Stops the faults: links heal, no more loss or duplication, no more crashes. */
  void heal() {
    faulty = false;
    cutUntilMillis.clear();
    network.setFaults(new SimulatedNetwork.Faults(2, 30, 0, 0, true));
  }

  /** Whether every DC is up and has applied every other DC's every commit. */
  boolean converged() {
    for (SimulatedDataCentre dataCentre : dataCentres) {
      if (!dataCentre.up() || dataCentre.receiver().pendingTransactions() > 0
          || dataCentre.receiver().transactionsInFlight() > 0) {
        return false;
      }
      for (SimulatedDataCentre origin : dataCentres) {
        if (origin != dataCentre && dataCentre.receiver().appliedVector().get(origin.id)
            < origin.highestLocalCommit()) {
          return false;
        }
      }
    }
    return true;
  }

  /** Each DC's replication state, for a failure's explanation. */
  String describe() {
    StringBuilder text = new StringBuilder();
    for (SimulatedDataCentre dataCentre : dataCentres) {
      text.append(dataCentre.name).append(" (").append(dataCentre.id).append(")");
      if (!dataCentre.up()) {
        text.append(" down; ");
        continue;
      }
      text.append(" highest local commit ").append(dataCentre.highestLocalCommit())
          .append(", received ").append(dataCentre.receiver().receivedVector().entries())
          .append(", applied ").append(dataCentre.receiver().appliedVector().entries())
          .append(", pending ").append(dataCentre.receiver().pendingTransactions())
          .append(", in flight ").append(dataCentre.receiver().transactionsInFlight())
          .append("; ");
    }
    return text.toString();
  }

  SimulatedDataCentre get(int index) {
    return dataCentres.get(index);
  }

  int size() {
    return dataCentres.size();
  }

  int indexOfId(int dataCentreId) {
    return indexOf(dataCentreId);
  }
}
