package dev.troupe.server.http;

import dev.troupe.model.ErrorCode;
import dev.troupe.runtime.LocalTransport;
import dev.troupe.runtime.MemoryStatus;
import dev.troupe.runtime.RemoteReplies;
import dev.troupe.runtime.Troupe;
import dev.troupe.runtime.TransactionMetrics;
import dev.troupe.runtime.TurnMetrics;
import dev.troupe.runtime.replication.ReplicationStatus;
import dev.troupe.server.replication.DataCentreReplication;
import dev.troupe.server.replication.ReplicationPuller;
import dev.troupe.storage.StorageStatistics;
import dev.troupe.storage.WriterTimings;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;

/** Renders {@code GET /metrics} in the Prometheus text exposition format (version 0.0.4). */
final class PrometheusMetrics {
  /** Histogram bucket upper bounds, in seconds. */
  private static final double[] LATENCY_BUCKETS_SECONDS = {
    0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10
  };

  /**
   * Partition hand-off bucket upper bounds, in seconds: an acquisition recovers the partition's
   * journal tail, from milliseconds to many seconds.
   */
  private static final double[] HAND_OFF_BUCKETS_SECONDS = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60
  };

  private final Troupe troupe;
  private final LongAdder requests;
  private final RequestAdmission admission;
  private final java.util.Optional<DataCentreReplication> replication;
  /** Parts of the server wired outside the engine (the system-of-record exporter). */
  private final List<java.util.function.Consumer<StringBuilder>> sources =
      new java.util.concurrent.CopyOnWriteArrayList<>();

  PrometheusMetrics(Troupe troupe, LongAdder requests, RequestAdmission admission,
      java.util.Optional<DataCentreReplication> replication) {
    this.troupe = troupe;
    this.requests = requests;
    this.admission = admission;
    this.replication = replication;
  }

  /** Adds a source that appends its own metrics, in the exposition format, to every render. */
  void addSource(java.util.function.Consumer<StringBuilder> source) {
    sources.add(source);
  }

  String render() {
    StringBuilder out = new StringBuilder(4096);
    StorageStatistics storage = troupe.storageStatistics();
    TurnMetrics turns = troupe.turnMetrics();

    counter(out, "troupe_commits_total", "Transaction records committed to the journal.",
        storage.commits());
    counter(out, "troupe_group_commits_total", "Synced journal write batches (group commits).",
        storage.groupCommits());
    out.append("# HELP troupe_turns_total Turns answered, by outcome.\n");
    out.append("# TYPE troupe_turns_total counter\n");
    out.append("troupe_turns_total{outcome=\"committed\"} ").append(turns.committedTurns()).append('\n');
    out.append("troupe_turns_total{outcome=\"unchanged\"} ").append(turns.unchangedTurns()).append('\n');
    for (Map.Entry<ErrorCode, Long> failed : turns.failedTurns().entrySet()) {
      out.append("troupe_turns_total{outcome=\"").append(failed.getKey().wireName()).append("\"} ")
          .append(failed.getValue()).append('\n');
    }
    latencyHistogram(out, turns.latencyHistogramMicros());
    writerTimings(out, troupe.writerTimings());
    dev.troupe.runtime.NodeHealth health = troupe.health();
    gauge(out, "troupe_ready", "1 when the node is ready for traffic (GET /v1/health/ready), else 0.",
        health.ready() ? 1 : 0);
    gauge(out, "troupe_storage_failed",
        "1 once storage failed and refuses every write (until a restart), else 0.",
        health.problems().stream().anyMatch(p -> p.code().equals("storage_failed")) ? 1 : 0);
    counter(out, "troupe_storage_corruptions_detected_total",
        "Reads that met stored data failing its integrity check (answered corrupt_data).",
        health.corruptionsDetected());
    counter(out, "troupe_cache_hits_total", "Object cache hits.", storage.cacheHits());
    counter(out, "troupe_cache_misses_total", "Object cache misses (materializations).",
        storage.cacheMisses());
    gauge(out, "troupe_cache_weight_bytes", "Estimated bytes held by the object cache.",
        storage.cacheWeightBytes());
    gauge(out, "troupe_journal_records_since_checkpoint",
        "Journal records not yet covered by a completed checkpoint round.",
        storage.journalRecordsSinceCheckpoint());
    gauge(out, "troupe_journal_records_retained", "Journal records not yet truncated.",
        storage.journalRecordsRetained());
    double checkpointAgeSeconds = storage.lastCheckpointMillis() == 0
        ? -1 : (System.currentTimeMillis() - storage.lastCheckpointMillis()) / 1000.0;
    gauge(out, "troupe_checkpoint_age_seconds",
        "Seconds since the last completed checkpoint round (-1: none yet).", checkpointAgeSeconds);
    counter(out, "troupe_checkpoint_rounds_total", "Checkpoint rounds completed.",
        storage.checkpointRounds());
    counter(out, "troupe_object_checkpoints_total", "Object checkpoints written.",
        storage.objectCheckpoints());
    counter(out, "troupe_journal_truncated_records_total", "Journal records truncated.",
        storage.truncatedRecords());
    gauge(out, "troupe_recovery_seconds", "Time the last start spent opening and recovering storage.",
        storage.recoveryMillis() / 1000.0);
    if (storage.files() != null) {
      gauge(out, "troupe_storage_table_file_bytes",
          "Bytes of the embedded RocksDB's live table (SST) files.",
          storage.files().tableFileBytes());
      gauge(out, "troupe_storage_blob_file_bytes",
          "Bytes of the embedded RocksDB's live blob files (the journal's large records).",
          storage.files().blobFileBytes());
      gauge(out, "troupe_storage_pending_compaction_bytes",
          "RocksDB's estimate of the bytes compaction still has to rewrite.",
          storage.files().pendingCompactionBytes());
    }
    gauge(out, "troupe_active_entities", "Entity actors in memory.", turns.activeEntities());
    counter(out, "troupe_entity_activations_total",
        "Entity actors started (entities activated by a message).", turns.activations());
    counter(out, "troupe_entity_passivations_total",
        "Entity actors stopped (passivated: idle, once used, or past the actor limit).",
        turns.passivations());
    memory(out, troupe.memoryStatus());
    TransactionMetrics transactions = troupe.transactionMetrics();
    out.append("# HELP troupe_transactions_total Multi-entity transactions answered, by outcome"
        + " (committed, or the abort reason or error code).\n");
    out.append("# TYPE troupe_transactions_total counter\n");
    out.append("troupe_transactions_total{outcome=\"committed\"} ")
        .append(transactions.committed()).append('\n');
    for (Map.Entry<String, Long> failed : transactions.failedByReason().entrySet()) {
      out.append("troupe_transactions_total{outcome=\"").append(failed.getKey()).append("\"} ")
          .append(failed.getValue()).append('\n');
    }
    counter(out, "troupe_transaction_lock_waits_total",
        "Transaction prepares that waited for a lock held by a younger transaction.",
        transactions.lockWaits());
    counter(out, "troupe_transaction_psac_delays_total",
        "Transaction parts a PSAC gate delayed because they depend on an action in progress.",
        transactions.psacDelays());
    counter(out, "troupe_transaction_lock_conflict_retries_total",
        "Transaction attempts killed by wait-die (retried, or given up on).",
        transactions.lockConflictRetries());
    gauge(out, "troupe_transactions_open", "Transactions started and not yet answered.",
        transactions.open());
    counter(out, "troupe_transactions_replanned_total",
        "Planned attempts planned again because their forwards reached beyond their plan.",
        transactions.replanned());
    counter(out, "troupe_transactions_planned_ran_dynamic_total",
        "Planned transactions run dynamic because of their dependencies.",
        transactions.plannedRanDynamic());
    gauge(out, "troupe_transactions_recovered_committed",
        "Prepared transaction parts the last start committed (their decision was durable).",
        transactions.recoveredCommitted());
    gauge(out, "troupe_transactions_recovered_aborted",
        "Prepared transaction parts the last start aborted (no decision: presumed abort).",
        transactions.recoveredAborted());
    LocalTransport transport = troupe.transport();
    counter(out, "troupe_transport_delivered_total",
        "Messages between cores the node's transport delivered (entity messages sent through it,"
            + " in-doubt questions and answers).",
        transport.delivered());
    out.append("# HELP troupe_transport_dropped_total Messages between cores the node's transport"
        + " dropped: addressed to another node (no cluster transport yet), or undeliverable.\n");
    out.append("# TYPE troupe_transport_dropped_total counter\n");
    out.append("troupe_transport_dropped_total{reason=\"other_node\"} ")
        .append(transport.droppedForOtherNodes()).append('\n');
    out.append("troupe_transport_dropped_total{reason=\"undeliverable\"} ")
        .append(transport.droppedUndeliverable()).append('\n');
    RemoteReplies replies = troupe.remoteReplies();
    gauge(out, "troupe_transport_pending_replies",
        "Turns, steps and reads sent to entities through the transport, not answered yet.",
        replies.pendingCount());
    counter(out, "troupe_transport_late_answers_total",
        "Answers through the transport dropped because their caller no longer waited (timed out"
            + " or duplicated).", replies.lateAnswers());
    counter(out, "troupe_transport_reply_timeouts_total",
        "Turns, steps and reads through the transport that got no answer in time.",
        replies.timedOut());
    counter(out, "troupe_transport_held_total",
        "Turns, steps and reads held, unsent, because their partition had no live home (its"
            + " member unreachable, declared down or just removed); counted each time.",
        replies.held());
    counter(out, "troupe_transport_held_too_long_total",
        "Held turns, steps and reads refused 503 unavailable after"
            + " troupe.transport.rehoming-wait-millis (never sent, nothing done).",
        replies.heldTooLong());
    counter(out, "troupe_transport_answered_at_downing_total",
        "Turns and steps waiting on a member when it was declared down, answered at once"
            + " (outcome unknown) instead of after the pending-reply timeout.",
        replies.answeredAtDowning());
    counter(out, "troupe_transport_reads_resent_at_downing_total",
        "Reads waiting on a member when it was declared down, sent again to the new home.",
        replies.resentAtDowning());
    counter(out, "troupe_transport_rerouted_total",
        "Turns and reads refused not_owner by a partition's old host (nothing done) and sent"
            + " again to its new home.", replies.rerouted());
    counter(out, "troupe_transport_reads_resent_total",
        "Reads sent through the transport again because their answer did not come within"
            + " troupe.transport.read-resend-millis (a read is safe to send twice).",
        replies.readsResent());
    counter(out, "troupe_transport_rehoming_probes_total",
        "Reads sent to learn a moving partition's new home while turns waited for it.",
        replies.probes());
    troupe.cluster().ifPresent(cluster -> cluster(out, cluster));
    messages(out);
    counter(out, "troupe_http_requests_total", "HTTP requests received.", requests.sum());
    counter(out, "troupe_http_overloaded_total",
        "HTTP requests refused at admission with 429 overloaded (all classes).", admission.refused());
    gauge(out, "troupe_http_in_flight_requests",
        "HTTP requests admitted and being served (all classes; health and metrics not counted).",
        admission.inFlight());
    requestClasses(out);
    replication.ifPresent(node -> replication(out, node));
    for (java.util.function.Consumer<StringBuilder> source : sources) {
      source.accept(out);
    }
    return out.toString();
  }

  /**
   * A named DC's replication: per peer the lag (its transactions received and not yet applied
   * here, and how far behind physical time its applied entry is) and the puller's counts; the
   * stable vector's age and the pending remote transactions.
   */
  private static void replication(StringBuilder out, DataCentreReplication node) {
    ReplicationStatus status = node.shell().status();
    out.append("# HELP troupe_replication_lag_transactions A peer's transactions received here and"
        + " not yet applied.\n");
    out.append("# TYPE troupe_replication_lag_transactions gauge\n");
    for (ReplicationStatus.PeerStatus peer : status.peers()) {
      peerLine(out, "troupe_replication_lag_transactions", peer.name(), peer.pendingTransactions());
    }
    out.append("# HELP troupe_replication_lag_millis How far behind physical time this DC's"
        + " applied entry of a peer is: its younger transactions may not be visible here yet.\n");
    out.append("# TYPE troupe_replication_lag_millis gauge\n");
    for (ReplicationStatus.PeerStatus peer : status.peers()) {
      peerLine(out, "troupe_replication_lag_millis", peer.name(), peer.lagMillis());
    }
    gauge(out, "troupe_replication_stable_vector_age_millis",
        "How far behind physical time the oldest entry of the stable vector (what every DC"
            + " received) is.", status.stableVectorAgeMillis());
    gauge(out, "troupe_replication_pending_transactions",
        "Remote transactions received here and not yet applied (all origins).",
        status.pendingRemoteTransactions());
    gauge(out, "troupe_replication_applying_transactions",
        "Remote transactions being applied right now.", status.applyingTransactions());
    gauge(out, "troupe_replication_log_entries", "Entries in the replication log (approximate).",
        status.logEntries());
    List<ReplicationPuller> pullers = node.pullers();
    out.append("# HELP troupe_replication_pulls_total Pulls from a peer answered with a batch.\n");
    out.append("# TYPE troupe_replication_pulls_total counter\n");
    for (ReplicationPuller puller : pullers) {
      peerLine(out, "troupe_replication_pulls_total", puller.peer().name(),
          puller.statistics().pulls());
    }
    out.append("# HELP troupe_replication_pulled_entries_total Replication log entries pulled"
        + " from a peer.\n");
    out.append("# TYPE troupe_replication_pulled_entries_total counter\n");
    for (ReplicationPuller puller : pullers) {
      peerLine(out, "troupe_replication_pulled_entries_total", puller.peer().name(),
          puller.statistics().entries());
    }
    out.append("# HELP troupe_replication_pull_failures_total Pulls from a peer that failed"
        + " (unreachable, timed out, refused, bad bytes).\n");
    out.append("# TYPE troupe_replication_pull_failures_total counter\n");
    for (ReplicationPuller puller : pullers) {
      peerLine(out, "troupe_replication_pull_failures_total", puller.peer().name(),
          puller.statistics().failures());
    }
    out.append("# HELP troupe_replication_last_pull_success_seconds When the last pull round from"
        + " a peer succeeded (Unix seconds; 0: none yet).\n");
    out.append("# TYPE troupe_replication_last_pull_success_seconds gauge\n");
    for (ReplicationPuller puller : pullers) {
      peerLine(out, "troupe_replication_last_pull_success_seconds", puller.peer().name(),
          puller.statistics().lastSuccessMillis() / 1000.0);
    }
  }

  private static void peerLine(StringBuilder out, String name, String peer, double value) {
    out.append(name).append("{peer=\"").append(peer).append("\"} ").append(value).append('\n');
  }

  private static void peerLine(StringBuilder out, String name, String peer, long value) {
    out.append(name).append("{peer=\"").append(peer).append("\"} ").append(value).append('\n');
  }

  /** Causal messages delivered by this node (docs/ARCHITECTURE.md, "Causal messages"). */
  private void messages(StringBuilder out) {
    dev.troupe.runtime.messages.MessageDelivery delivery = troupe.messageDelivery();
    if (delivery == null) {
      return; // a cluster member delivers no causal messages (issue 18)
    }
    counter(out, "troupe_messages_delivered_total",
        "Causal messages whose receiving action ran.", delivery.deliveredCount());
    counter(out, "troupe_messages_redelivered_total",
        "Deliveries repeated after a restart and skipped by the receiver's delivered marker.",
        delivery.redeliveredCount());
    out.append("# HELP troupe_messages_failed_total Causal messages consumed without effect, by"
        + " the error that stopped the receiving action.\n");
    out.append("# TYPE troupe_messages_failed_total counter\n");
    delivery.failedCounts().forEach((reason, count) ->
        out.append("troupe_messages_failed_total{reason=\"").append(reason).append("\"} ")
            .append(count).append('\n'));
    gauge(out, "troupe_messages_pending",
        "Causal messages committed and read, not yet delivered (blocked messages).",
        delivery.pendingMessages());
  }

  /** Per class of work: its current limit, its admitted requests and its refusals. */
  private void requestClasses(StringBuilder out) {
    out.append("# HELP troupe_http_concurrency_limit Concurrent requests a class of work may have"
        + " admitted now (adaptive, or max-in-flight-requests when not adaptive).\n");
    out.append("# TYPE troupe_http_concurrency_limit gauge\n");
    for (RequestAdmission.WorkClass workClass : RequestAdmission.WorkClass.LIMITED) {
      labelled(out, "troupe_http_concurrency_limit", workClass, admission.limit(workClass));
    }
    out.append("# HELP troupe_http_class_in_flight_requests HTTP requests of a class of work"
        + " being served.\n");
    out.append("# TYPE troupe_http_class_in_flight_requests gauge\n");
    for (RequestAdmission.WorkClass workClass : RequestAdmission.WorkClass.LIMITED) {
      labelled(out, "troupe_http_class_in_flight_requests", workClass,
          admission.inFlight(workClass));
    }
    out.append("# HELP troupe_http_refused_total HTTP requests of a class of work refused at"
        + " admission (429 overloaded with Retry-After).\n");
    out.append("# TYPE troupe_http_refused_total counter\n");
    for (RequestAdmission.WorkClass workClass : RequestAdmission.WorkClass.LIMITED) {
      labelled(out, "troupe_http_refused_total", workClass, admission.refused(workClass));
    }
  }

  private static void labelled(StringBuilder out, String name, RequestAdmission.WorkClass workClass,
      long value) {
    out.append(name).append("{class=\"").append(workClass.label()).append("\"} ").append(value)
        .append('\n');
  }

  private static void memory(StringBuilder out, MemoryStatus memory) {
    gauge(out, "troupe_memory_budget_bytes",
        "What actors, caches and in-flight work may hold together (troupe.memory).",
        memory.budgetBytes());
    out.append("# HELP troupe_memory_estimated_bytes Estimated bytes held within the budget, by"
        + " holder.\n");
    out.append("# TYPE troupe_memory_estimated_bytes gauge\n");
    out.append("troupe_memory_estimated_bytes{holder=\"actors\"} ").append(memory.actorBytes())
        .append('\n');
    out.append("troupe_memory_estimated_bytes{holder=\"cache\"} ").append(memory.cacheBytes())
        .append('\n');
    out.append("troupe_memory_estimated_bytes{holder=\"rendered\"} ")
        .append(memory.renderedBytes()).append('\n');
    gauge(out, "troupe_memory_actor_limit", "Most entity actors the budget allows now.",
        memory.actorLimit());
    gauge(out, "troupe_memory_cache_maximum_bytes", "The object cache's maximum weight now.",
        memory.cacheMaximumBytes());
    gauge(out, "troupe_memory_budget_scale",
        "Share of the budget in use (collections past the shed mark lower it).",
        memory.scalePermille() / 1000.0);
    gauge(out, "troupe_memory_heap_after_collection_bytes",
        "The old generation's occupancy right after its last collection (-1: none yet).",
        memory.occupancyAfterCollectionBytes());
    gauge(out, "troupe_memory_old_generation_bytes",
        "The old generation's maximum size; the memory marks are shares of it.",
        memory.oldGenerationBytes());
    gauge(out, "troupe_memory_refusing", "1 while new work is refused because memory is short.",
        memory.refusing() ? 1 : 0);
    counter(out, "troupe_memory_refusals_total",
        "Requests refused with 503 because memory was short.", memory.refusals());
    long collections = 0;
    long collectionMillis = 0;
    for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
      collections += Math.max(0, collector.getCollectionCount());
      collectionMillis += Math.max(0, collector.getCollectionTime());
    }
    counter(out, "troupe_jvm_gc_collections_total", "Garbage collections since start.",
        collections);
    counter(out, "troupe_jvm_gc_seconds_total", "Time spent in garbage collections since start.",
        collectionMillis / 1000.0);
    gauge(out, "troupe_jvm_uptime_seconds", "Seconds since the JVM started.",
        ManagementFactory.getRuntimeMXBean().getUptime() / 1000.0);
    gauge(out, "troupe_jvm_heap_max_bytes", "The JVM's maximum heap.",
        Runtime.getRuntime().maxMemory());
  }

  private static void latencyHistogram(StringBuilder out, Histogram micros) {
    histogram(out, "troupe_turn_latency_seconds", "Turn latency from request to durable answer.",
        micros, LATENCY_BUCKETS_SECONDS);
  }

  /** Where commits' time goes on the storage writers (issue 20). */
  private static void writerTimings(StringBuilder out, WriterTimings.Snapshot timings) {
    histogram(out, "troupe_storage_commit_wait_seconds", "Per write submitted to a partition's"
        + " writer (a transaction's record, or a change of a transaction's state), from its"
        + " submission to the start of the group it joined: the groups and maintenance slices"
        + " ahead of it.", timings.commitWait(), LATENCY_BUCKETS_SECONDS);
    histogram(out, "troupe_storage_commit_seconds", "Per write submitted to a partition's"
        + " writer, from its submission to its group's end: written, synced as its durability"
        + " requires, applied to the object cache.", timings.commit(), LATENCY_BUCKETS_SECONDS);
    histogram(out, "troupe_storage_journal_write_seconds", "Per group commit, its write batch's"
        + " write, with its sync when it has one.", timings.journalWrite(),
        LATENCY_BUCKETS_SECONDS);
    String name = "troupe_storage_maintenance_slice_seconds";
    header(out, name, "Per maintenance slice a partition's writer ran between commit groups, by"
        + " kind (every commit arriving meanwhile waits for it).");
    for (Map.Entry<WriterTimings.Slice, Histogram> slice : timings.slices().entrySet()) {
      buckets(out, name, "kind=\"" + slice.getKey().wireName() + "\"", slice.getValue(),
          LATENCY_BUCKETS_SECONDS);
    }
  }

  /** An HdrHistogram of microseconds as a Prometheus histogram in seconds. */
  private static void histogram(StringBuilder out, String name, String help, Histogram micros,
      double[] bucketsSeconds) {
    header(out, name, help);
    buckets(out, name, "", micros, bucketsSeconds);
  }

  private static void header(StringBuilder out, String name, String help) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(" histogram\n");
  }

  /** The samples of one histogram series; {@code labels} ("" for none) precede {@code le}. */
  private static void buckets(StringBuilder out, String name, String labels, Histogram micros,
      double[] bucketsSeconds) {
    String prefix = labels.isEmpty() ? "" : labels + ",";
    for (double bound : bucketsSeconds) {
      long count = micros.getTotalCount() == 0 ? 0
          : micros.getCountBetweenValues(0, (long) (bound * 1_000_000));
      out.append(name).append("_bucket{").append(prefix).append("le=\"").append(bound)
          .append("\"} ").append(count).append('\n');
    }
    out.append(name).append("_bucket{").append(prefix).append("le=\"+Inf\"} ")
        .append(micros.getTotalCount()).append('\n');
    String series = labels.isEmpty() ? "" : "{" + labels + "}";
    double sumSeconds = micros.getMean() * micros.getTotalCount() / 1_000_000.0;
    out.append(name).append("_sum").append(series).append(' ').append(sumSeconds).append('\n');
    out.append(name).append("_count").append(series).append(' ').append(micros.getTotalCount())
        .append('\n');
  }

  /** The cluster transport's counters and the partitions hosted here (cluster members only). */
  private static void cluster(StringBuilder out, dev.troupe.runtime.cluster.ClusterNode cluster) {
    dev.troupe.runtime.cluster.ClusterTransport transport = cluster.transport();
    out.append("# HELP troupe_cluster_transport_sent_total Messages between cores this node sent"
        + " to other members (or itself) over the cluster: to a partition's host, to a node.\n");
    out.append("# TYPE troupe_cluster_transport_sent_total counter\n");
    out.append("troupe_cluster_transport_sent_total{to=\"partition\"} ")
        .append(transport.sentToPartitions()).append('\n');
    out.append("troupe_cluster_transport_sent_total{to=\"node\"} ")
        .append(transport.sentToNodes()).append('\n');
    counter(out, "troupe_cluster_transport_delivered_total",
        "Messages between cores that arrived here over the cluster and reached the node's inbox.",
        transport.delivered());
    out.append("# HELP troupe_cluster_transport_dropped_total Messages between cores the cluster"
        + " transport dropped: for a node no up member carries, damaged, undeliverable, or"
        + " reaching a partition while it moved.\n");
    out.append("# TYPE troupe_cluster_transport_dropped_total counter\n");
    out.append("troupe_cluster_transport_dropped_total{reason=\"no_member\"} ")
        .append(transport.droppedNoMember()).append('\n');
    out.append("troupe_cluster_transport_dropped_total{reason=\"damaged\"} ")
        .append(transport.droppedDamaged()).append('\n');
    out.append("troupe_cluster_transport_dropped_total{reason=\"undeliverable\"} ")
        .append(transport.droppedUndeliverable()).append('\n');
    out.append("troupe_cluster_transport_dropped_total{reason=\"partition_moving\"} ")
        .append(transport.droppedMoving()).append('\n');
    counter(out, "troupe_cluster_refused_while_handing_off_total",
        "Messages that reached a partition's host here while it handed the partition off,"
            + " refused not_owner (nothing done; a turn or read goes again to the new host).",
        transport.refusedWhileHandingOff());
    counter(out, "troupe_cluster_questions_for_removed_nodes_total",
        "Decision questions for a node no up member carries that this node's inbox answered"
            + " instead (from the shared store, once that node's coordinators are ended).",
        transport.questionsAnsweredHere());
    gauge(out, "troupe_cluster_hosted_partitions",
        "Storage partitions this node hosts now (acquired, their registries running).",
        cluster.hosted().hostedPartitions().size());
    counter(out, "troupe_cluster_members_downed_total",
        "Other members this node saw declared down (by the split brain resolver) since start.",
        cluster.verdicts().downedCount());
    gauge(out, "troupe_cluster_last_member_downed_timestamp_seconds",
        "When this node last saw another member declared down, in seconds since the epoch (0:"
            + " never): the moment the failover bound is measured from.",
        cluster.verdicts().lastDownedEpochMillis() / 1000.0);
    dev.troupe.runtime.cluster.HandOffMetrics handOffs = cluster.handOffs();
    histogram(out, "troupe_cluster_partition_acquire_seconds",
        "How long taking a partition over took here: its acquisition under a new owner epoch,"
            + " its recovery and the resolution of the parts in doubt its previous owner left.",
        handOffs.acquireHistogramMicros(), HAND_OFF_BUCKETS_SECONDS);
    histogram(out, "troupe_cluster_partition_release_seconds",
        "How long giving a partition back took here: refusing new commits, draining its writes,"
            + " stopping its writer.",
        handOffs.releaseHistogramMicros(), HAND_OFF_BUCKETS_SECONDS);
    counter(out, "troupe_cluster_partitions_acquired_total",
        "Partitions this node acquired (took over) since start.", handOffs.acquired());
    counter(out, "troupe_cluster_partitions_released_total",
        "Partitions this node released (handed off, or stopped after a loss) since start.",
        handOffs.released());
    counter(out, "troupe_cluster_partitions_lost_total",
        "Partitions this node lost since start: another node's newer owner epoch fenced a write.",
        handOffs.lost());
    counter(out, "troupe_cluster_partition_acquire_failures_total",
        "Acquisitions of a partition that failed here (its next message starts it again).",
        handOffs.acquireFailures());
    counter(out, "troupe_cluster_status_late_answers_total",
        "Node status answers from other members dropped because the query had timed out.",
        cluster.statuses().lateAnswers());
  }

  private static void counter(StringBuilder out, String name, String help, long value) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(" counter\n");
    out.append(name).append(' ').append(value).append('\n');
  }

  private static void counter(StringBuilder out, String name, String help, double value) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(" counter\n");
    out.append(name).append(' ').append(value).append('\n');
  }

  private static void gauge(StringBuilder out, String name, String help, double value) {
    out.append("# HELP ").append(name).append(' ').append(help).append('\n');
    out.append("# TYPE ").append(name).append(" gauge\n");
    out.append(name).append(' ').append(value).append('\n');
  }
}
