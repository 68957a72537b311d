package dev.troupe.runtime;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertSame;

import dev.troupe.model.EntityId;
import dev.troupe.model.EntityState;
import dev.troupe.model.Json;
import dev.troupe.model.Operation;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.storage.CachedState;
import java.util.List;
import org.junit.jupiter.api.Test;

/** A state is rendered once per type; a new state (every write makes one) is rendered anew. */
class RenderedStatesTest {
  @Test
  void rendersEachStateOncePerTypeAndNeverServesAStaleRendering() {
    RenderedStates rendered = new RenderedStates(1 << 20);
    CompiledType type = CompiledType.schemaless("User");
    EntityState first = EntityState.ABSENT.apply(
        List.of(new Operation.Assign("name", Json.NODES.textNode("Ada"))), 10, 1);

    byte[] json = rendered.render(type, first);
    assertEquals(Json.parse("{\"name\":\"Ada\"}"), Json.parse(json));
    assertSame(json, rendered.render(type, first), "the second read reuses the rendering");

    assertSame(json, rendered.render(CompiledType.schemaless("User"), first),
        "undeclared types are compiled per request: an equal type reuses the rendering");
    CompiledType declared = CompiledType.compile(SpecParser.parse("User",
        "keys: {name: {kind: register}, age: {kind: register, default: 0}}"
            .getBytes(java.nio.charset.StandardCharsets.UTF_8), true));
    byte[] withDefaults = rendered.render(declared, first);
    assertNotSame(json, withDefaults, "another type renders anew");
    assertEquals(Json.parse("{\"name\":\"Ada\",\"age\":0}"), Json.parse(withDefaults));

    EntityState second = first.apply(
        List.of(new Operation.Assign("name", Json.NODES.textNode("Grace"))), 11, 1);
    assertEquals(Json.parse("{\"name\":\"Grace\"}"), Json.parse(rendered.render(type, second)));
    assertEquals(Json.parse("{\"name\":\"Ada\"}"), Json.parse(rendered.render(type, first)),
        "the older state keeps its own rendering");
  }

  @Test
  void aCachedEntryIsRenderedOncePerVersionFromItsEncoding() {
    RenderedStates rendered = new RenderedStates(1 << 20);
    CompiledType type = CompiledType.schemaless("User");
    EntityId entity = new EntityId("User", "u1");
    EntityState state = EntityState.ABSENT.apply(
        List.of(new Operation.Assign("name", Json.NODES.textNode("Ada"))), 10, 1);
    CachedState cached = CachedState.of(entity, state);

    byte[] json = rendered.render(type, cached);
    assertEquals(Json.parse("{\"name\":\"Ada\"}"), Json.parse(json));
    assertArrayEquals(Json.writeBytes(type.render(state)), json,
        "made from the encoding: the bytes of the decoded state's rendering");
    assertSame(json, rendered.render(type, cached), "a hot entry's read is a memo hit");
    CachedState next = CachedState.of(entity, state.apply(
        List.of(new Operation.Assign("name", Json.NODES.textNode("Grace"))), 11, 1));
    assertEquals(Json.parse("{\"name\":\"Grace\"}"), Json.parse(rendered.render(type, next)),
        "a new version (a new entry) is rendered anew");
  }
}
