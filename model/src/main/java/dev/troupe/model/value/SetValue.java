package dev.troupe.model.value;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import dev.troupe.model.Json;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * Add-wins observed-remove set. Each element maps to the tags of the additions not yet removed; an
 * element is present while it has a live tag. A remove deletes only the tags it observed, so an add
 * concurrent with a remove survives (add wins). Replication delivers operations causally, so no
 * tombstones are needed: an add is never delivered after a remove that observed it. A deletion of
 * the whole set is the same rule for every element ({@link #withoutTags}).
 *
 * <p>Elements are identified by their compact JSON text; {@link dev.troupe.model.Json} parses all
 * integers as longs so equal values have equal text.
 */
public record SetValue(Map<String, Element> elements) implements Value {
  public static final SetValue EMPTY = new SetValue(Map.of());

  /** One element and the live tags of its additions. */
  public record Element(JsonNode value, Set<Tag> tags) {
    public Element {
      tags = Set.copyOf(tags);
    }
  }

  public SetValue {
    elements = Map.copyOf(elements);
  }

  @Override
  public KeyKind kind() {
    return KeyKind.SET;
  }

  public boolean contains(JsonNode element) {
    Element e = elements.get(Json.write(element));
    return e != null && !e.tags().isEmpty();
  }

  /** The live tags of an element: what a remove issued now would observe. */
  public Set<Tag> tagsOf(JsonNode element) {
    Element e = elements.get(Json.write(element));
    return e == null ? Set.of() : e.tags();
  }

  public int size() {
    return elements.size();
  }

  /** Elements in the order of their JSON text, so output is deterministic. */
  @Override
  public JsonNode toJson() {
    ArrayNode array = Json.NODES.arrayNode();
    new TreeMap<>(elements).values().forEach(e -> array.add(e.value()));
    return array;
  }

  public SetValue add(JsonNode element, Tag tag) {
    String id = Json.write(element);
    Map<String, Element> next = new HashMap<>(elements);
    Element existing = next.get(id);
    Set<Tag> tags = new HashSet<>(existing == null ? Set.of() : existing.tags());
    tags.add(tag);
    next.put(id, new Element(element, tags));
    return new SetValue(next);
  }

  public SetValue remove(JsonNode element, Set<Tag> observedTags) {
    String id = Json.write(element);
    Map<String, Element> next = new HashMap<>(elements);
    Element existing = next.get(id);
    if (existing != null) {
      Set<Tag> tags = new HashSet<>(existing.tags());
      tags.removeAll(observedTags);
      if (tags.isEmpty()) {
        next.remove(id);
      } else {
        next.put(id, new Element(existing.value(), tags));
      }
    }
    return new SetValue(next);
  }

  /** Every tag of every element: what a deletion of the whole set issued now observes. */
  public Set<Tag> allTags() {
    Set<Tag> tags = new HashSet<>();
    elements.values().forEach(element -> tags.addAll(element.tags()));
    return tags;
  }

  /**
   * This set without the additions a deletion of the whole set observed: elements added
   * concurrently (tags not observed) stay, as for {@link #remove}.
   */
  public SetValue withoutTags(Set<Tag> observedTags) {
    Map<String, Element> next = new HashMap<>();
    elements.forEach((id, element) -> {
      Set<Tag> tags = new HashSet<>(element.tags());
      tags.removeAll(observedTags);
      if (!tags.isEmpty()) {
        next.put(id, new Element(element.value(), tags));
      }
    });
    return new SetValue(next);
  }
}
