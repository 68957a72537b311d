package dev.troupe.model.codec;

import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.model.TroupeException;
import dev.troupe.model.dependency.Dependency;
import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;
import dev.troupe.model.dependency.KeyReference;
import java.nio.charset.StandardCharsets;

/**
 * A dependency's stored JSON form ({@link Dependency#toJson}, revision {@link
 * Dependency#FORMAT_REVISION}) written and read without a Jackson tree, byte for byte the same as
 * Jackson writes it: the journal, prepared records, checkpoints and the replication log carry every
 * dependency record in this form, and building and parsing a tree for each took about a tenth of
 * the declared marketplace's CPU samples (docs/BENCHMARKS.md, "Issue 20: the marketplace's
 * declared side").
 *
 * <p>Only <i>plain</i> text takes this path: every string printable ASCII without a quote or a
 * backslash, which Jackson writes as is (no escape; {@code /} is not escaped by default). Anything
 * else (a non-ASCII id, an escape, another field order, a field the reader does not expect, a value
 * the parser refuses) falls back to Jackson and {@link Dependency#fromJson}, so what is accepted,
 * refused and produced never differs from the tree's path ({@code StoredDependencyJsonTest}
 * compares both on arbitrary text).
 *
 * <p>Pure and thread-safe.
 */
public final class StoredDependencyJson {
  private StoredDependencyJson() {}

  /** The stored JSON bytes of {@code dependency}: what {@code Json.writeBytes(toJson())} gives. */
  public static byte[] write(Dependency dependency) {
    String leader = dependency.leader().entity().toString();
    String follower = dependency.follower().entity().toString();
    String function = dependency.function() == null ? null : dependency.function().wireName();
    if (!plain(dependency.id()) || !plain(dependency.kind().wireName()) || !plain(leader)
        || !plain(dependency.leader().key()) || !plain(follower)
        || !plain(dependency.follower().key()) || function != null && !plain(function)) {
      return Json.writeBytes(dependency.toJson());
    }
    StringBuilder text = new StringBuilder(96 + dependency.id().length() + leader.length()
        + follower.length());
    text.append("{\"id\":\"").append(dependency.id())
        .append("\",\"kind\":\"").append(dependency.kind().wireName())
        .append("\",\"leader\":{\"entity\":\"").append(leader)
        .append("\",\"key\":\"").append(dependency.leader().key())
        .append("\"},\"follower\":{\"entity\":\"").append(follower)
        .append("\",\"key\":\"").append(dependency.follower().key()).append("\"}");
    if (function != null) {
      text.append(",\"function\":\"").append(function).append('"');
    }
    return text.append('}').toString().getBytes(StandardCharsets.ISO_8859_1);
  }

  /**
   * The dependency stored as {@code bytes}: parsed directly when they are the plain form {@link
   * #write} produces, else by Jackson and {@link Dependency#fromJson} (which also reports every
   * problem). {@code parseTree} is the caller's tree parser (it decides how damage is reported).
   */
  public static Dependency read(byte[] bytes,
      java.util.function.Function<byte[], com.fasterxml.jackson.databind.JsonNode> parseTree) {
    Dependency plain = readPlain(bytes);
    return plain != null ? plain : Dependency.fromJson(parseTree.apply(bytes));
  }

  /** The dependency when {@code bytes} are exactly the plain form, else null. */
  static Dependency readPlain(byte[] bytes) {
    Cursor in = new Cursor(bytes);
    if (!in.literal("{\"id\":\"") || in.plainUntilQuote() == null
        || !in.literal(",\"kind\":\"")) {
      return null;
    }
    String kindName = in.plainUntilQuote();
    if (kindName == null || !in.literal(",\"leader\":{\"entity\":\"")) {
      return null;
    }
    String leaderEntity = in.plainUntilQuote();
    if (leaderEntity == null || !in.literal(",\"key\":\"")) {
      return null;
    }
    String leaderKey = in.plainUntilQuote();
    if (leaderKey == null || !in.literal("},\"follower\":{\"entity\":\"")) {
      return null;
    }
    String followerEntity = in.plainUntilQuote();
    if (followerEntity == null || !in.literal(",\"key\":\"")) {
      return null;
    }
    String followerKey = in.plainUntilQuote();
    if (followerKey == null || !in.literal("}")) {
      return null;
    }
    String functionName = null;
    if (in.literal(",\"function\":\"")) {
      functionName = in.plainUntilQuote();
      if (functionName == null) {
        return null;
      }
    }
    if (!in.literal("}") || !in.atEnd()) {
      return null;
    }
    // The same checks as Dependency.fromJson; any refusal goes the tree's way, which reports it.
    DependencyKind kind = DependencyKind.fromWireName(kindName);
    if (kind == null || leaderKey.isEmpty() || followerKey.isEmpty()) {
      return null;
    }
    try {
      DependencyFunction function = functionName == null ? null
          : DependencyFunction.parse(functionName);
      return new Dependency(kind, new KeyReference(EntityId.parse(leaderEntity), leaderKey),
          new KeyReference(EntityId.parse(followerEntity), followerKey), function);
    } catch (TroupeException refused) {
      return null;
    }
  }

  /** Printable ASCII without a quote or a backslash: Jackson writes it unescaped. */
  static boolean plain(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') {
        return false;
      }
    }
    return true;
  }

  /** Reads the plain form left to right. */
  private static final class Cursor {
    private final byte[] bytes;
    private int position;

    Cursor(byte[] bytes) {
      this.bytes = bytes;
    }

    /** Consumes {@code expected} (ASCII) if it comes next. */
    boolean literal(String expected) {
      int length = expected.length();
      if (position + length > bytes.length) {
        return false;
      }
      for (int i = 0; i < length; i++) {
        if (bytes[position + i] != expected.charAt(i)) {
          return false;
        }
      }
      position += length;
      return true;
    }

    /** Plain text up to a closing quote (consumed), or null if it is not plain or not closed. */
    String plainUntilQuote() {
      int start = position;
      while (position < bytes.length) {
        byte b = bytes[position];
        if (b == '"') {
          String text = new String(bytes, start, position - start, StandardCharsets.ISO_8859_1);
          position++;
          return text;
        }
        if (b < 0x20 || b > 0x7e || b == '\\') {
          return null; // negative bytes (non-ASCII) are refused here too
        }
        position++;
      }
      return null;
    }

    boolean atEnd() {
      return position == bytes.length;
    }
  }
}
