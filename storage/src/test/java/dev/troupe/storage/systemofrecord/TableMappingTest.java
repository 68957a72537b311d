package dev.troupe.storage.systemofrecord;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.Json;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.storage.systemofrecord.TableMapping.Column;
import dev.troupe.storage.systemofrecord.TableMapping.SqlType;
import dev.troupe.storage.systemofrecord.TableMapping.TableShape;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** How types become tables: columns from the spec, the schema diff, rows, and refusals. */
class TableMappingTest {
  static CompiledType type(String yaml) {
    return CompiledType.compile(SpecParser.parse(null, yaml.getBytes(StandardCharsets.UTF_8), true));
  }

  static final String ACCOUNT = """
      type: Account
      keys:
        balance: {kind: register, default: 0}
        status:  {kind: register, default: "new"}
        vip:     {kind: register, default: false}
        note:    {kind: register}
        logins:  {kind: counter}
        tags:    {kind: set}
      """;

  @Test
  void columnsFollowTheKindsAndTheDeclaredDefaults() throws Exception {
    TableShape shape = TableMapping.shape(type(ACCOUNT));
    assertEquals(List.of(new Column("balance", SqlType.NUMERIC), new Column("status", SqlType.TEXT),
        new Column("vip", SqlType.BOOLEAN), new Column("note", SqlType.JSONB),
        new Column("logins", SqlType.BIGINT), new Column("tags", SqlType.JSONB)),
        shape.columns());
    assertTrue(TableMapping.createTable(shape).startsWith(
        "CREATE TABLE IF NOT EXISTS \"Account\" (id text PRIMARY KEY, version bigint NOT NULL,"
            + " origin integer NOT NULL, \"balance\" numeric"));
    assertTrue(TableMapping.upsert(shape).endsWith("WHERE excluded.version > t.version"));
  }

  @Test
  void aSchemalessTypeIsOneJsonbColumn() throws Exception {
    TableShape shape = TableMapping.shape(CompiledType.schemaless("Receipt"));
    assertEquals(List.of(new Column("state", SqlType.JSONB)), shape.columns());
    ObjectNode state = (ObjectNode) Json.parse("{\"amount\": 5}");
    assertEquals(List.of("{\"amount\":5}"), TableMapping.row(shape, "r1", state));
  }

  @Test
  void anAddedKeyAddsItsColumnAndNothingElse() throws Exception {
    TableShape shape = TableMapping.shape(type(ACCOUNT + "  email: {kind: register, default: \"\"}\n"));
    Map<String, SqlType> existing = new HashMap<>();
    for (String fixed : TableMapping.FIXED_COLUMNS) {
      existing.put(fixed, SqlType.TEXT);
    }
    for (Column column : TableMapping.shape(type(ACCOUNT)).columns()) {
      existing.put(column.name(), column.type());
    }
    assertEquals(List.of(new Column("email", SqlType.TEXT)),
        TableMapping.columnsToAdd(shape, existing));
    existing.put("email", SqlType.TEXT);
    assertEquals(List.of(), TableMapping.columnsToAdd(shape, existing));
  }

  @Test
  void aColumnWhoseTypeWouldChangeIsUnmappable() throws Exception {
    TableShape shape = TableMapping.shape(type(ACCOUNT.replace(
        "logins:  {kind: counter}", "logins:  {kind: set}")));
    Map<String, SqlType> existing = new HashMap<>(Map.of("logins", SqlType.BIGINT));
    UnmappableException refused = assertThrows(UnmappableException.class,
        () -> TableMapping.columnsToAdd(shape, existing));
    assertTrue(refused.getMessage().contains("\"logins\""), refused.getMessage());
  }

  @Test
  void rowsCarryTypedValuesAndRefuseWhatTheirColumnCannotHold() throws Exception {
    CompiledType account = type(ACCOUNT);
    TableShape shape = TableMapping.shape(account);
    ObjectNode state = (ObjectNode) Json.parse("""
        {"balance": 12.5, "status": "open", "vip": true, "note": {"a": [1]}, "logins": 3,
         "tags": ["x", "y"]}""");
    assertEquals(Arrays.asList(new BigDecimal("12.5"), "open", true, "{\"a\":[1]}", 3L,
        "[\"x\",\"y\"]"), TableMapping.row(shape, "k1", state));
    state.put("balance", "a lot");
    UnmappableException refused = assertThrows(UnmappableException.class,
        () -> TableMapping.row(shape, "k1", state));
    assertTrue(refused.getMessage().contains("Account/k1") && refused.getMessage()
        .contains("balance"), refused.getMessage());
    state.putNull("balance");
    assertEquals(null, TableMapping.row(shape, "k1", state).get(0), "JSON null is SQL NULL");
  }

  @Test
  void namesPostgresCannotHoldAreUnmappable() {
    assertThrows(UnmappableException.class, () -> TableMapping.shape(type(
        "type: T\nkeys:\n  version: {kind: counter}\n")));
    assertThrows(UnmappableException.class,
        () -> TableMapping.shape(CompiledType.schemaless("x".repeat(64))));
    assertEquals("\"a\"\"b\"", TableMapping.quote("a\"b"));
  }
}
