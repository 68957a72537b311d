package dev.troupe.runtime;

import dev.troupe.model.EntityId;
import dev.troupe.model.Invariants;
import dev.troupe.model.TroupeException;
import dev.troupe.storage.Store;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;

/**
 * A page of a type's entities in id order (docs/ARCHITECTURE.md, "Listing entities"): the
 * candidates come from the store's listing index ({@link Store#listing}, one range read per
 * batch, never a scan of the journal), and each is read, latest or as of a version, to keep
 * exactly the entities that exist there, with their versions. The index keeps a deleted entity's
 * key, so existence is always decided by the read, which is the same read a {@code GET} of the
 * entity makes: a page at a version holds exactly the entities a snapshot read at that version
 * finds (a deleted then re-created entity included), and a page of the latest states only
 * entities that exist when read.
 *
 * <p>Why a cursor is the last id: the index is ordered by id and every commit puts its entities'
 * keys in its own batch, so a page after id X holds only ids above X. An entity that exists
 * throughout a paging is read by exactly one page (the one whose id range holds it), and never
 * twice, whatever is inserted or deleted meanwhile; one created or deleted meanwhile may or may
 * not appear, once at most.
 *
 * <p>Bounds: at most {@code limit} entities ({@code troupe.listing.max-limit}); at most {@code
 * max-examined} listing keys per page (a page that reached it ends early with its cursor, so a
 * type full of deleted entities never makes a request unbounded); the candidates of a page come
 * from one range read (another only when deleted ones left the page short) and are read {@code
 * concurrent-reads} at a time, so a cold page does not fill the materialization queue. Any failed
 * read fails the page (never a page with a hole).
 */
public final class EntityListing {
  private final Store store;
  private final ReadPath reads;
  private final RuntimeSettings.ListingSettings settings;

  EntityListing(Store store, ReadPath reads, RuntimeSettings.ListingSettings settings) {
    this.store = store;
    this.reads = reads;
    this.settings = settings;
  }

  /**
   * One listed entity: its id, its version (the latest, or the one at the page's version) and,
   * when asked for, its state there as JSON bytes (null otherwise; not to be modified).
   */
  public record Entry(String id, long version, byte[] stateJson) {}

  /**
   * A page: its entities in id order, and where the next one starts ({@code after} of the next
   * request), null when the type has no entity after this page.
   */
  public record Page(String type, List<Entry> entities, String next) {}

  /**
   * The page of {@code type} from the id {@code startId} (included with {@code includeStart},
   * else only ids after it: a cursor; null: from the first), at most {@code limit} entities, of
   * the latest states or as of version {@code at}, with their states when {@code withStates}.
   *
   * @throws TroupeException (in the future) {@code invalid_request} for a limit outside 1..{@code
   *     max-limit} or a version not yet issued, {@code history_truncated} for a version below the
   *     history horizon, or whatever a read of a candidate fails with
   */
  CompletableFuture<Page> page(String type, String startId, boolean includeStart, int limit,
      OptionalLong at, boolean withStates) {
    if (limit < 1 || limit > settings.maxLimit()) {
      return CompletableFuture.failedFuture(TroupeException.invalid(
          "limit must be 1 to " + settings.maxLimit() + ", was " + limit));
    }
    Store.Snapshot pinned = null;
    if (at.isPresent()) {
      long current = store.currentTimestamp();
      if (at.getAsLong() > current) {
        return CompletableFuture.failedFuture(TroupeException.invalid("cannot list at "
            + at.getAsLong() + ": the current version is " + current));
      }
      try {
        // Keeps every version at or after it readable until the page is read (refused, 410,
        // when some partition's history is truncated past it already).
        pinned = store.pinSnapshot(at.getAsLong());
      } catch (TroupeException truncated) {
        return CompletableFuture.failedFuture(truncated);
      }
    }
    if (at.isPresent() && at.getAsLong() == 0) {
      // Version 0 is before every write (and 0 means "the latest" to the read path below): no
      // entity existed there.
      pinned.close();
      return CompletableFuture.completedFuture(new Page(type, List.of(), null));
    }
    Store.Snapshot release = pinned;
    CompletableFuture<Page> page =
        new Collecting(type, limit, at.orElse(0), withStates).from(startId, includeStart);
    return release == null ? page : page.whenComplete((result, failure) -> release.close());
  }

  /** The state of one page being collected; continues batch by batch. */
  private final class Collecting {
    private final String type;
    private final int limit;
    private final long timestamp;
    private final boolean withStates;
    private final List<Entry> found = new ArrayList<>();
    private int examined;

    Collecting(String type, int limit, long timestamp, boolean withStates) {
      this.type = type;
      this.limit = limit;
      this.timestamp = timestamp;
      this.withStates = withStates;
    }

    CompletableFuture<Page> from(String startId, boolean includeStart) {
      // One range read for what the page still needs, at least a window's worth (so a small
      // page over many deleted entities is not one range read per key), at most what
      // max-examined leaves; then the candidates are read in windows of concurrent-reads.
      int wanted = Math.min(Math.max(limit - found.size(), settings.concurrentReads()),
          settings.maxExamined() - examined);
      Invariants.check(wanted > 0, "listing %s: nothing left to read from %s", type, startId);
      return reads.onStoragePool(() -> store.listing(type, startId, includeStart, wanted))
          .thenCompose(candidates -> window(candidates, 0, wanted));
    }

    /** Reads the candidates from {@code first} on, a window at a time, in order. */
    private CompletableFuture<Page> window(List<EntityId> candidates, int first, int asked) {
      int end = Math.min(candidates.size(), first + settings.concurrentReads());
      List<CompletableFuture<ReadPath.Found>> states = new ArrayList<>(end - first);
      for (int i = first; i < end; i++) {
        states.add(reads.foundAnywhere(candidates.get(i), timestamp));
      }
      return CompletableFuture.allOf(states.toArray(CompletableFuture[]::new))
          .thenCompose(all -> {
            for (int i = first; i < end; i++) {
              examined++;
              ReadPath.Found state = states.get(i - first).join();
              if (state.exists()) {
                EntityId entity = candidates.get(i);
                found.add(new Entry(entity.id(), state.version(),
                    withStates ? reads.render(entity, state) : null));
                if (found.size() == limit) {
                  return CompletableFuture.completedFuture(
                      new Page(type, List.copyOf(found), entity.id()));
                }
              }
            }
            if (end < candidates.size()) {
              return window(candidates, end, asked);
            }
            if (candidates.size() < asked) {
              return CompletableFuture.completedFuture(new Page(type, List.copyOf(found), null));
            }
            String last = candidates.get(candidates.size() - 1).id();
            if (examined >= settings.maxExamined()) {
              return CompletableFuture.completedFuture(new Page(type, List.copyOf(found), last));
            }
            return from(last, false);
          });
    }
  }
}
