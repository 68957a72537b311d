package dev.troupe.runtime;

import dev.troupe.model.ErrorCode;
import dev.troupe.model.TroupeException;
import dev.troupe.storage.Store;
import dev.troupe.txn.entity.MemoryBudgetCore;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.lang.management.MemoryNotificationInfo;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import javax.management.Notification;
import javax.management.NotificationEmitter;
import javax.management.NotificationListener;
import org.apache.pekko.actor.typed.ActorRef;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Shell of {@link MemoryBudgetCore}: reads the actors' and caches' estimated weights and the old
 * generation's occupancy after collections, feeds the core once per {@code check-interval-millis}
 * (and at once when a collection leaves the old generation past the shed mark: a collection-usage
 * threshold notification), and applies its decisions: the registries' actor limits, the object
 * cache's and rendered-state memo's maximum weights, refusing new work, and asking for a
 * collection. Everything but {@link #refuseIfShort} and {@link #status} runs on its one thread.
 */
final class MemoryWatch implements AutoCloseable {
  private static final Logger log = LoggerFactory.getLogger(MemoryWatch.class);

  private final RuntimeSettings.MemorySettings settings;
  private final MemoryBudgetCore core;
  private final Store store;
  private final RenderedStates renderedStates;
  /** The registries running now (in a cluster, those of the partitions this node hosts). */
  private final Supplier<List<ActorRef<EntityRegistry.Command>>> registries;
  private final TurnMetrics metrics;
  /** The pool that holds what survives collections; null when the collector has none we know. */
  private final MemoryPoolMXBean oldGeneration;
  /** The space the marks are shares of ({@link MemoryBudgetCore#markedSpaceBytes}). */
  private final long oldGenerationBytes;
  private final List<GarbageCollectorMXBean> oldCollectors = new ArrayList<>();
  /**
   * G1's collectors that leave garbage in the old generation: young and mixed collections ("G1
   * Young Generation") and the Remark and Cleanup pauses ("G1 Concurrent GC"). Every other
   * collector of the old generation (G1's full collections, ParallelGC's and SerialGC's old
   * collections) collects all of it.
   */
  private static final java.util.Set<String> PARTIAL_COLLECTORS =
      java.util.Set.of("G1 Young Generation", "G1 Concurrent GC");
  /** The old-generation collectors that collect all of it (see {@link #PARTIAL_COLLECTORS}). */
  private final List<GarbageCollectorMXBean> wholeCollectors = new ArrayList<>();
  /** Their count of collections at the last check. */
  private long lastWholeCollectionCount;
  /** The collectors' count of collections at the last check (only this thread touches these). */
  private long lastCollectionCount;
  /** The old generation's collection usage at the last fresh reading; -1 before the first. */
  private long lastCollectionUsageBytes = -1;
  /** Collections after which the old generation's collection usage changed: the fresh readings. */
  private long freshReadings;
  private final ScheduledExecutorService thread;
  private final NotificationListener thresholdListener;
  private final LongAdder refusals = new LongAdder();
  private volatile boolean refusing;
  private volatile MemoryStatus status;
  private int actorLimit;

  MemoryWatch(RuntimeSettings.MemorySettings settings, Store store, RenderedStates renderedStates,
      Supplier<List<ActorRef<EntityRegistry.Command>>> registries, TurnMetrics metrics) {
    this.settings = settings;
    this.store = store;
    this.renderedStates = renderedStates;
    this.registries = registries;
    this.metrics = metrics;
    this.oldGeneration = findOldGeneration();
    long oldMaximum = oldGeneration == null ? -1 : oldGeneration.getUsage().getMax();
    this.oldGenerationBytes =
        MemoryBudgetCore.markedSpaceBytes(oldMaximum, settings.maxHeapBytes());
    MemoryBudgetCore.Limits limits = settings.limits(oldGenerationBytes);
    this.core = new MemoryBudgetCore(limits);
    this.actorLimit = settings.initialSplit().actorLimit();
    if (oldGeneration != null) {
      for (GarbageCollectorMXBean collector : ManagementFactory.getGarbageCollectorMXBeans()) {
        if (List.of(collector.getMemoryPoolNames()).contains(oldGeneration.getName())) {
          oldCollectors.add(collector);
          if (!PARTIAL_COLLECTORS.contains(collector.getName())) {
            wholeCollectors.add(collector);
            lastWholeCollectionCount += Math.max(0, collector.getCollectionCount());
          }
        }
      }
    }
    this.status = new MemoryStatus(settings.budgetBytes(), 0, actorLimit, 0,
        settings.initialSplit().cacheMaximumBytes(), 0, -1, oldGenerationBytes, false, 0, 1000);
    this.thread = Executors.newSingleThreadScheduledExecutor(
        Thread.ofPlatform().name("troupe-memory").daemon(true).factory());
    this.thresholdListener = (Notification notification, Object handback) -> {
      if (MemoryNotificationInfo.MEMORY_COLLECTION_THRESHOLD_EXCEEDED.equals(
          notification.getType())) {
        checkSoon();
      }
    };
    if (oldGeneration != null && oldGeneration.isCollectionUsageThresholdSupported()) {
      oldGeneration.setCollectionUsageThreshold(limits.shedAboveBytes());
      ((NotificationEmitter) ManagementFactory.getMemoryMXBean())
          .addNotificationListener(thresholdListener, null, null);
    }
    thread.scheduleWithFixedDelay(this::check, settings.checkIntervalMillis(),
        settings.checkIntervalMillis(), TimeUnit.MILLISECONDS);
    log.info("memory budget {} MB ({}% of a {} MB heap), initially up to {} entity actors;"
            + " marks on a {} MB old generation ({}): shed above {}%, refuse above {}%,"
            + " resume below {}%", settings.budgetBytes() >> 20,
        settings.budgetBytes() * 100 / settings.maxHeapBytes(), settings.maxHeapBytes() >> 20,
        actorLimit, oldGenerationBytes >> 20,
        oldGeneration == null ? "unknown pool: the heap" : oldGeneration.getName(),
        settings.shedAboveOldGenerationPercent(), settings.refuseAboveOldGenerationPercent(),
        settings.resumeBelowOldGenerationPercent());
  }

  /**
   * The heap pool of long-lived objects: "G1 Old Gen" (G1, the launcher's collector), "PS Old Gen"
   * (ParallelGC), "Tenured Gen" (SerialGC); null for collectors without one (ZGC, Shenandoah),
   * which then give no heap signal and the budget works on estimates alone.
   */
  private static MemoryPoolMXBean findOldGeneration() {
    for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
      String name = pool.getName().toLowerCase(Locale.ROOT);
      if (pool.getType() == MemoryType.HEAP && pool.isCollectionUsageThresholdSupported()
          && (name.contains("old") || name.contains("tenured"))) {
        return pool;
      }
    }
    return null;
  }

  /** Fails with {@code unavailable} while the heap is too full for new work; counts refusals. */
  void refuseIfShort() {
    if (refusing) {
      refusals.increment();
      MemoryStatus now = status;
      throw new TroupeException(ErrorCode.UNAVAILABLE, String.format(Locale.ROOT,
          "memory is short (the old generation was %d%% full after the last collection); retry"
              + " later", Math.max(0, now.occupancyAfterCollectionBytes()) * 100
              / Math.max(1, now.oldGenerationBytes())));
    }
  }

  MemoryStatus status() {
    MemoryStatus last = status;
    return new MemoryStatus(last.budgetBytes(), last.actorBytes(), last.actorLimit(),
        last.cacheBytes(), last.cacheMaximumBytes(), last.renderedBytes(),
        last.occupancyAfterCollectionBytes(), last.oldGenerationBytes(), refusing,
        refusals.sum(), last.scalePermille());
  }

  private void checkSoon() {
    try {
      thread.execute(this::check);
    } catch (RejectedExecutionException closed) {
      // Closing: nothing more to decide.
    }
  }

  private void check() {
    try {
      long collections = 0;
      for (GarbageCollectorMXBean collector : oldCollectors) {
        collections += Math.max(0, collector.getCollectionCount());
      }
      long wholeCollections = 0;
      for (GarbageCollectorMXBean collector : wholeCollectors) {
        wholeCollections += Math.max(0, collector.getCollectionCount());
      }
      long afterCollection = -1;
      // Whether the reading's collection collected the whole old generation: one of those ran
      // since the last check (G1's young and Remark pauses after it leave the usage as it set it).
      boolean wholeCollection = wholeCollections > lastWholeCollectionCount;
      lastWholeCollectionCount = wholeCollections;
      long occupancy;
      if (oldGeneration != null) {
        java.lang.management.MemoryUsage usage = oldGeneration.getCollectionUsage();
        if (collections > 0 && usage != null) {
          afterCollection = usage.getUsed();
          // A reading is fresh when a collection changed the old generation's collection usage.
          // Under ParallelGC and SerialGC only full collections are counted here and each sets
          // it; G1's young collections are counted too (its young collector lists the old pool)
          // but leave it as it was (only mixed and full collections and G1's Remark and Cleanup
          // pauses set it), and a stale value taken as fresh would shed again at every young
          // collection.
          if (collections > lastCollectionCount && afterCollection != lastCollectionUsageBytes) {
            freshReadings++;
            lastCollectionUsageBytes = afterCollection;
          }
        }
        lastCollectionCount = collections;
        occupancy = oldGeneration.getUsage().getUsed();
      } else {
        occupancy = Runtime.getRuntime().totalMemory() - Runtime.getRuntime().freeMemory();
      }
      long cacheBytes = store.statistics().cacheWeightBytes();
      long actorBytes = Math.max(0, metrics.actorBytes());
      int actorCount = metrics.activeEntities();
      MemoryBudgetCore.Decision decision = core.decide(new MemoryBudgetCore.Reading(
          System.nanoTime() / 1_000_000, actorBytes, actorCount, cacheBytes, freshReadings,
          afterCollection, wholeCollection, occupancy));
      apply(decision);
      status = new MemoryStatus(settings.budgetBytes(), actorBytes, decision.actorLimit(),
          cacheBytes, decision.cacheMaximumBytes(), renderedStates.weightBytes(), afterCollection,
          oldGenerationBytes, decision.refusing(), refusals.sum(), decision.scalePermille());
    } catch (RuntimeException e) {
      // Never let one bad reading end the periodic check.
      log.warn("memory check failed", e);
    }
  }

  private void apply(MemoryBudgetCore.Decision decision) {
    if (decision.actorLimit() != actorLimit) {
      actorLimit = decision.actorLimit();
      List<ActorRef<EntityRegistry.Command>> running = registries.get();
      int perRegistry = Math.max(1, actorLimit / Math.max(1, running.size()));
      for (ActorRef<EntityRegistry.Command> registry : running) {
        registry.tell(new EntityRegistry.LimitActive(perRegistry));
      }
    }
    store.resizeCache(decision.cacheMaximumBytes());
    renderedStates.resize(decision.renderedMaximumBytes());
    if (decision.refusing() != refusing) {
      refusing = decision.refusing();
      if (refusing) {
        log.warn("memory is short: the old generation is past {}% after collections; refusing"
            + " new work (503) until it is below {}%", settings.refuseAboveOldGenerationPercent(),
            settings.resumeBelowOldGenerationPercent());
      } else {
        log.info("memory recovered: accepting new work again");
      }
    }
    if (decision.collectNow()) {
      // Refusing, and no collection has shown whether shedding freed enough; or a partial
      // collection left the old generation past the high-water mark, maybe with garbage: find out.
      System.gc();
    }
  }

  @Override
  public void close() {
    thread.shutdownNow();
    if (oldGeneration != null && oldGeneration.isCollectionUsageThresholdSupported()) {
      try {
        ((NotificationEmitter) ManagementFactory.getMemoryMXBean())
            .removeNotificationListener(thresholdListener);
      } catch (javax.management.ListenerNotFoundException ignored) {
        // Never added.
      }
    }
  }
}
