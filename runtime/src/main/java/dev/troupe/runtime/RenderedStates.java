package dev.troupe.runtime;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.storage.CachedState;

/**
 * The JSON of recently read entity states, so that reading a hot entity again costs a lookup, not a
 * render: a read of a 1 KB entity otherwise spends most of its server-side CPU building and writing
 * the JSON tree.
 *
 * <p>Keyed by the state object itself, by identity and weakly: the object cache's entry ({@link
 * CachedState}, encoded: a hit decodes nothing) or a decoded state. Both are immutable and every
 * write makes a new one, so an entry can never be stale, and it goes when its state is no longer
 * held (by the object cache or a reader). A rendering is only reused for the type it was rendered with or
 * an equal one (undeclared types are compiled per request, with equal specs; a redefinition with
 * a different spec renders anew). Bounded by the bytes held (its part of the memory budget, at
 * most {@code rendered-state-cache-bytes}).
 *
 * <p>Thread-safe.
 */
final class RenderedStates {
  private record Rendered(CompiledType type, byte[] json) {}

  /** Keys: {@link CachedState} or {@link EntityState}, by identity (weak keys). */
  private final Cache<Object, Rendered> cache;

  RenderedStates(long maxBytes) {
    this.cache = Caffeine.newBuilder()
        .weakKeys()
        .maximumWeight(maxBytes)
        .weigher((Object state, Rendered rendered) -> 32 + rendered.json().length)
        .build();
  }

  /** The estimated bytes held now. */
  long weightBytes() {
    return cache.policy().eviction().map(eviction -> eviction.weightedSize().orElse(0)).orElse(0L);
  }

  /** Changes the bound on bytes held (the memory budget moves it); a lower one evicts down to it. */
  void resize(long maxBytes) {
    cache.policy().eviction().ifPresent(eviction -> {
      if (eviction.getMaximum() != maxBytes) {
        eviction.setMaximum(maxBytes);
      }
    });
  }

  /** The state rendered by {@code type} as JSON bytes; the caller must not modify them. */
  byte[] render(CompiledType type, EntityState state) {
    return render(type, state, () -> Json.writeBytes(type.render(state)));
  }

  /**
   * The cached entry's state rendered by {@code type} as JSON bytes (decoded only when not
   * memoized, and not at all for a schemaless type's plain state held encoded); the caller must
   * not modify them.
   */
  byte[] render(CompiledType type, CachedState cached) {
    return render(type, cached, () -> {
      // A schemaless type's rendering of an encoded entry is made from its bytes when the state
      // is plain (the same JSON; CachedState.renderedSchemaless); else the state is decoded.
      byte[] json = type.isSchemaless() ? cached.renderedSchemaless() : null;
      return json != null ? json : Json.writeBytes(type.render(cached.state()));
    });
  }

  /** The memo's rendering under {@code key}, or {@code renderer}'s, memoized there. */
  private byte[] render(CompiledType type, Object key,
      java.util.function.Supplier<byte[]> renderer) {
    Rendered rendered = cache.getIfPresent(key);
    if (rendered != null
        && (rendered.type() == type || rendered.type().spec().equals(type.spec()))) {
      return rendered.json();
    }
    byte[] json = renderer.get();
    cache.put(key, new Rendered(type, json));
    return json;
  }
}
