package dev.troupe.storage.systemofrecord;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.KeySpec;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * How a Troupe type becomes a PostgreSQL table (docs/ARCHITECTURE.md, "System of record"): pure
 * functions from a type's declaration to a table shape, from a shape and the columns a table has to
 * the columns to add, from a rendered state to a row, and the SQL text of each statement. No JDBC.
 *
 * <p><b>Mapping.</b> One table per type, named as the type, with {@code id text primary key},
 * {@code version bigint} (the commit timestamp of the state's last write), {@code origin int} (the
 * data centre of the last write the export saw), then one column per declared key, named as the
 * key: a counter {@code bigint}; a register typed from its declared default (a number {@code
 * numeric}, a string {@code text}, a boolean {@code boolean}, anything else, {@code null} included,
 * {@code jsonb}); a set and a key family {@code jsonb} (the set's elements as an array, the family's
 * members as an object of member to value, as the REST API renders them). A schemaless type has one
 * {@code jsonb} column {@code state}: the rendered state.
 *
 * <p><b>Evolution.</b> An added key adds a column; a key whose column would change type (its kind
 * or its default's JSON type changed, which type evolution allows only with a migration) is {@link
 * UnmappableException unmappable}: the exporter stops and says so. A key removed keeps its column,
 * no longer written.
 */
public final class TableMapping {
  /** The columns every table starts with. */
  public static final List<String> FIXED_COLUMNS = List.of("id", "version", "origin");
  /** The one column of a schemaless type's table. */
  public static final String STATE_COLUMN = "state";
  /** The table of the exporter's own watermark: no type may be named so. */
  public static final String WATERMARK_TABLE = "troupe_system_of_record";
  /** PostgreSQL's longest identifier, in bytes (NAMEDATALEN - 1). */
  static final int MAX_IDENTIFIER_BYTES = 63;

  private TableMapping() {}

  /** A column's PostgreSQL type. */
  public enum SqlType {
    TEXT("text"), BIGINT("bigint"), INTEGER("integer"), NUMERIC("numeric"), BOOLEAN("boolean"),
    JSONB("jsonb");

    private final String sql;

    SqlType(String sql) {
      this.sql = sql;
    }

    public String sql() {
      return sql;
    }

    /** The type of a column as {@code information_schema.columns.data_type} names it, or null. */
    public static SqlType fromInformationSchema(String dataType) {
      for (SqlType type : values()) {
        if (type.sql.equals(dataType.toLowerCase(Locale.ROOT))) {
          return type;
        }
      }
      return null;
    }
  }

  /** One key's column. */
  public record Column(String name, SqlType type) {}

  /** A type's table: its name and its key columns (after the fixed ones), in declaration order. */
  public record TableShape(String type, boolean schemaless, List<Column> columns) {
    public TableShape {
      columns = List.copyOf(columns);
    }
  }

  /** The table shape of a type as declared now. */
  public static TableShape shape(CompiledType type) throws UnmappableException {
    String name = type.name();
    checkIdentifier("type", name);
    if (name.equals(WATERMARK_TABLE)) {
      throw new UnmappableException("type " + name + " has the name of the exporter's own table");
    }
    List<Column> columns = new ArrayList<>();
    if (type.isSchemaless()) {
      columns.add(new Column(STATE_COLUMN, SqlType.JSONB));
      return new TableShape(name, true, columns);
    }
    for (Map.Entry<String, KeySpec> key : type.spec().keys().entrySet()) {
      String column = key.getKey();
      checkIdentifier("key of " + name, column);
      if (FIXED_COLUMNS.contains(column)) {
        throw new UnmappableException("type " + name + " declares a key '" + column
            + "', the name of a column every exported table has (" + FIXED_COLUMNS + ")");
      }
      columns.add(new Column(column, columnType(key.getValue())));
    }
    return new TableShape(name, false, columns);
  }

  private static SqlType columnType(KeySpec key) {
    if (key.family()) {
      return SqlType.JSONB;
    }
    return switch (key.kind()) {
      case COUNTER -> SqlType.BIGINT;
      case SET, DEPENDENCIES -> SqlType.JSONB;
      case REGISTER -> {
        JsonNode initial = key.defaultValue();
        if (initial.isNumber()) {
          yield SqlType.NUMERIC;
        } else if (initial.isTextual()) {
          yield SqlType.TEXT;
        } else if (initial.isBoolean()) {
          yield SqlType.BOOLEAN;
        }
        yield SqlType.JSONB;
      }
    };
  }

  private static void checkIdentifier(String what, String name) throws UnmappableException {
    if (name.getBytes(StandardCharsets.UTF_8).length > MAX_IDENTIFIER_BYTES) {
      throw new UnmappableException(what + " '" + name + "' is longer than PostgreSQL's "
          + MAX_IDENTIFIER_BYTES + "-byte identifiers");
    }
  }

  /**
   * The key columns {@code shape} has and the table does not: to add, in order.
   *
   * @param existing the table's columns and their types (the fixed ones included); a type not
   *     among {@link SqlType}'s is null
   * @throws UnmappableException if a column the shape needs exists with another type
   */
  public static List<Column> columnsToAdd(TableShape shape, Map<String, SqlType> existing)
      throws UnmappableException {
    List<Column> missing = new ArrayList<>();
    for (Column column : shape.columns()) {
      if (!existing.containsKey(column.name())) {
        missing.add(column);
      } else if (existing.get(column.name()) != column.type()) {
        throw new UnmappableException("table \"" + shape.type() + "\" has column \""
            + column.name() + "\" of type " + existing.get(column.name()) + " but the type now"
            + " maps it to " + column.type().sql() + " (a kind or default changed): re-export"
            + " the type into a new table (drop it, or the database, and restart the exporter)");
      }
    }
    return missing;
  }

  /**
   * The key columns' values of a rendered state, in the shape's order: {@code Long} (bigint),
   * {@code java.math.BigDecimal} (numeric), {@code String} (text, and jsonb as JSON text), {@code
   * Boolean}, or null.
   *
   * @throws UnmappableException if a value does not fit its column (a register assigned a value of
   *     another JSON type than its default's)
   */
  public static List<Object> row(TableShape shape, String id, ObjectNode rendered)
      throws UnmappableException {
    List<Object> values = new ArrayList<>(shape.columns().size());
    for (Column column : shape.columns()) {
      JsonNode value = shape.schemaless() ? rendered : rendered.get(column.name());
      values.add(cell(shape, id, column, value));
    }
    return values;
  }

  private static Object cell(TableShape shape, String id, Column column, JsonNode value)
      throws UnmappableException {
    if (value == null || value.isNull() || value.isMissingNode()) {
      return null;
    }
    Object cell = switch (column.type()) {
      case BIGINT, INTEGER -> value.canConvertToLong() && value.isIntegralNumber()
          ? value.longValue() : null;
      case NUMERIC -> value.isNumber() ? value.decimalValue() : null;
      case TEXT -> value.isTextual() ? value.textValue() : null;
      case BOOLEAN -> value.isBoolean() ? value.booleanValue() : null;
      case JSONB -> value.toString();
    };
    if (cell == null) {
      throw new UnmappableException(shape.type() + "/" + id + ": key '" + column.name()
          + "' holds " + abbreviate(value.toString()) + ", which its " + column.type().sql()
          + " column cannot hold (the column's type comes from the key's declared default)");
    }
    return cell;
  }

  private static String abbreviate(String text) {
    return text.length() <= 80 ? text : text.substring(0, 77) + "...";
  }

  // ------------------------------------------------------------------------------ SQL text

  /** A PostgreSQL identifier, quoted. */
  public static String quote(String identifier) {
    return '"' + identifier.replace("\"", "\"\"") + '"';
  }

  public static String createTable(TableShape shape) {
    StringBuilder sql = new StringBuilder("CREATE TABLE IF NOT EXISTS ")
        .append(quote(shape.type()))
        .append(" (id text PRIMARY KEY, version bigint NOT NULL, origin integer NOT NULL");
    for (Column column : shape.columns()) {
      sql.append(", ").append(quote(column.name())).append(' ').append(column.type().sql());
    }
    return sql.append(')').toString();
  }

  public static String addColumn(TableShape shape, Column column) {
    return "ALTER TABLE " + quote(shape.type()) + " ADD COLUMN IF NOT EXISTS "
        + quote(column.name()) + ' ' + column.type().sql();
  }

  /**
   * The guarded upsert of one row: parameters id, version, origin, then the key columns (a jsonb
   * one as JSON text). A row already at a version at or above the new one is left as it is, so
   * replaying a batch changes nothing.
   */
  public static String upsert(TableShape shape) {
    StringBuilder columns = new StringBuilder("id, version, origin");
    StringBuilder values = new StringBuilder("?, ?, ?");
    StringBuilder updates = new StringBuilder("version = excluded.version, origin = excluded.origin");
    for (Column column : shape.columns()) {
      String name = quote(column.name());
      columns.append(", ").append(name);
      values.append(column.type() == SqlType.JSONB ? ", ?::jsonb" : ", ?");
      updates.append(", ").append(name).append(" = excluded.").append(name);
    }
    return "INSERT INTO " + quote(shape.type()) + " AS t (" + columns + ") VALUES (" + values
        + ") ON CONFLICT (id) DO UPDATE SET " + updates + " WHERE excluded.version > t.version";
  }

  /**
   * The guarded deletion of a deleted entity's row: parameters id and the version of its deleted
   * state; a row written at or after that version (a later re-creation) stays.
   */
  public static String delete(TableShape shape) {
    return "DELETE FROM " + quote(shape.type()) + " WHERE id = ? AND version < ?";
  }
}
