package dev.troupe.model.spec;

import dev.troupe.model.dependency.DependencyFunction;
import dev.troupe.model.dependency.DependencyKind;

import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadFeature;
import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import dev.troupe.model.EntityId;
import dev.troupe.model.TroupeException;
import dev.troupe.model.value.KeyKind;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Reads type specs from JSON or YAML (DESIGN.md, "Data model"), for example:
 *
 * <pre>{@code
 * {"type": "Account", "admission": "serial",
 *  "keys": {"balance": {"kind": "register", "default": 0}, "visits": {"kind": "counter"}},
 *  "actions": {"withdraw": {"params": {"amount": "int"},
 *                           "pre": ["amount > 0", "balance - amount >= 0"],
 *                           "effect": {"balance": "balance - amount"}}}}
 * }</pre>
 *
 * <p>Fields: {@code type} (optional when the type is named by the request path, and then equal to
 * it), {@code admission} (default {@code serial}; {@code serial}, {@code keys} or {@code psac}),
 * {@code psac} (with {@code psac} admission only: {@code {maxInFlight, maxOvertakes}}, see {@link
 * PsacSettings}), {@code consistency} ({@code causal}, the default, or {@code strong}) and {@code
 * home} (a strong type's home data centre, or {@code {rule}} giving each entity's, see {@link
 * Consistency}), {@code schemaless} (default false), {@code keys}
 * (name to {@code {kind, default, family}}), {@code actions} (name to {@code {params, members,
 * pre, effect, sync, send}}). Parsing is strict: an unknown field, a value of the wrong JSON type, a duplicate field
 * name, an unknown key kind, parameter type or admission policy, and every rule of {@link
 * TypeSpec}, {@link ActionSpec} and {@link KeySpec} is reported as a {@link TroupeException} with
 * {@code INVALID_REQUEST} whose message starts with the offending path, e.g. {@code
 * actions.withdraw.pre[2]: must be a string}. Malformed JSON or YAML is reported the same way.
 *
 * <p>Sizes are not limited here: the server limits the request body. Stateless and thread-safe.
 */
public final class SpecParser {
  private static final ObjectMapper JSON =
      JsonMapper.builder()
          .enable(DeserializationFeature.USE_LONG_FOR_INTS)
          .enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS)
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .build();

  private static final ObjectMapper YAML =
      YAMLMapper.builder()
          .enable(DeserializationFeature.USE_LONG_FOR_INTS)
          .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
          .build();

  private static final List<String> TYPE_FIELDS =
      List.of("type", "admission", "psac", "schemaless", "keys", "actions", "dependencies",
          "consistency", "home");
  private static final List<String> DEPENDENCY_FIELDS =
      List.of("follower", "kind", "leader", "function");
  private static final List<String> KEY_FIELDS = List.of("kind", "default", "family");
  private static final List<String> ACTION_FIELDS =
      List.of("params", "members", "pre", "effect", "sync", "send");
  private static final List<String> SYNC_FIELDS = List.of("entity", "action", "args");

  private SpecParser() {}

  /**
   * Parses the spec of one type, as sent to {@code PUT /v1/types/{type}}.
   *
   * @param typeNameFromPath the type name from the request path; the body's {@code type}, if any,
   *     must equal it. Null when there is no path, and then the body must name the type.
   * @param body the JSON or YAML text (UTF-8)
   * @param yaml whether the body is YAML (JSON is also valid YAML, but the JSON reader gives
   *     sharper errors for JSON)
   * @throws TroupeException with {@code INVALID_REQUEST} naming the offending path
   */
  public static TypeSpec parse(String typeNameFromPath, byte[] body, boolean yaml) {
    List<JsonNode> documents = readDocuments(body, yaml);
    if (documents.size() != 1) {
      throw TroupeException.invalid(
          "expected one type spec, found "
              + documents.size()
              + " YAML documents; define one type per request");
    }
    return fromJson(typeNameFromPath, documents.get(0));
  }

  /**
   * Parses several type specs from one file, each naming its type: YAML documents separated by
   * {@code ---}, or a JSON array of spec objects. Messages are prefixed with {@code document N: }
   * (counting from 1).
   *
   * @throws TroupeException with {@code INVALID_REQUEST} for any invalid spec, or two specs of one
   *     type
   */
  public static List<TypeSpec> parseAll(byte[] body, boolean yaml) {
    List<JsonNode> documents = readDocuments(body, yaml);
    if (!yaml && documents.size() == 1 && documents.get(0).isArray()) {
      List<JsonNode> elements = new ArrayList<>();
      documents.get(0).forEach(elements::add);
      documents = elements;
      if (documents.isEmpty()) {
        throw TroupeException.invalid("the array holds no type spec");
      }
    }
    List<TypeSpec> specs = new ArrayList<>();
    Map<String, Integer> documentOfType = new HashMap<>();
    for (int i = 0; i < documents.size(); i++) {
      JsonNode document = documents.get(i);
      String prefix = "document " + (i + 1) + ": ";
      TypeSpec spec = withPrefix(prefix, () -> fromJson(null, document));
      Integer earlier = documentOfType.putIfAbsent(spec.name(), i + 1);
      if (earlier != null) {
        throw TroupeException.invalid(
            prefix + "type " + spec.name() + " is already defined by document " + earlier);
      }
      specs.add(spec);
    }
    return List.copyOf(specs);
  }

  /**
   * Builds a spec from its parsed JSON tree; also how a stored {@link TypeSpec#toJson()} is read
   * back.
   *
   * @param typeNameFromPath as for {@link #parse}
   * @throws TroupeException with {@code INVALID_REQUEST} naming the offending path
   */
  public static TypeSpec fromJson(String typeNameFromPath, JsonNode tree) {
    if (tree == null || !tree.isObject()) {
      throw TroupeException.invalid("a type spec must be an object, got " + describe(tree));
    }
    checkFields(tree, "", TYPE_FIELDS);
    String name = typeName(typeNameFromPath, tree.get("type"));
    AdmissionPolicy admission = AdmissionPolicy.SERIAL;
    JsonNode admissionNode = tree.get("admission");
    if (admissionNode != null) {
      String wireName = text(admissionNode, "admission");
      admission = AdmissionPolicy.fromWireName(wireName);
      if (admission == null) {
        throw TroupeException.invalid(
            "admission: unknown policy '"
                + wireName
                + "'; expected one of "
                + Arrays.stream(AdmissionPolicy.values())
                    .map(AdmissionPolicy::wireName)
                    .collect(Collectors.joining(", ")));
      }
    }
    boolean schemaless = false;
    JsonNode schemalessNode = tree.get("schemaless");
    if (schemalessNode != null) {
      if (!schemalessNode.isBoolean()) {
        throw TroupeException.invalid(
            "schemaless: must be a boolean, got " + describe(schemalessNode));
      }
      schemaless = schemalessNode.booleanValue();
    }
    Map<String, KeySpec> keys = new LinkedHashMap<>();
    forEachField(
        tree.get("keys"), "keys", (key, node) -> keys.put(key, keySpec("keys." + key, node)));
    Map<String, ActionSpec> actions = new LinkedHashMap<>();
    forEachField(
        tree.get("actions"),
        "actions",
        (action, node) -> actions.put(action, actionSpec(action, node)));
    JsonNode psacNode = tree.get("psac");
    if (psacNode != null && admission != AdmissionPolicy.PSAC) {
      throw TroupeException.invalid("psac: bounds only apply with \"admission\": \"psac\"");
    }
    List<DependencySpec> dependencies = new ArrayList<>();
    JsonNode dependenciesNode = tree.get("dependencies");
    if (dependenciesNode != null) {
      if (!dependenciesNode.isArray()) {
        throw TroupeException.invalid("dependencies: must be a list, got "
            + describe(dependenciesNode));
      }
      for (int i = 0; i < dependenciesNode.size(); i++) {
        dependencies.add(dependencySpec("dependencies[" + i + "]", dependenciesNode.get(i)));
      }
    }
    return new TypeSpec(name, keys, actions, admission, schemaless,
        PsacSettings.fromJson(psacNode), dependencies, consistency(tree));
  }

  /** {@code consistency} ({@code causal}, the default, or {@code strong}) and {@code home}. */
  private static Consistency consistency(JsonNode tree) {
    JsonNode consistencyNode = tree.get("consistency");
    JsonNode homeNode = tree.get("home");
    boolean strong = false;
    if (consistencyNode != null) {
      String wireName = text(consistencyNode, "consistency");
      if (!wireName.equals(Consistency.CAUSAL_WIRE_NAME)
          && !wireName.equals(Consistency.STRONG_WIRE_NAME)) {
        throw TroupeException.invalid("consistency: unknown consistency '" + wireName
            + "'; expected causal or strong");
      }
      strong = wireName.equals(Consistency.STRONG_WIRE_NAME);
    }
    if (homeNode != null && homeNode.isObject()) {
      checkFields(homeNode, "home.", List.of("rule"));
      JsonNode ruleNode = homeNode.get("rule");
      if (ruleNode == null) {
        throw TroupeException.invalid("home.rule: missing; a per-entity home is {\"rule\": CEL"
            + " over id}");
      }
      return new Consistency(strong, null, text(ruleNode, "home.rule"));
    }
    String home = homeNode == null ? null : text(homeNode, "home");
    return new Consistency(strong, home);
  }

  private static DependencySpec dependencySpec(String path, JsonNode node) {
    requireObject(node, path);
    checkFields(node, path + ".", DEPENDENCY_FIELDS);
    JsonNode followerNode = node.get("follower");
    if (followerNode == null) {
      throw TroupeException.invalid(path + ".follower: missing");
    }
    String follower = text(followerNode, path + ".follower");
    JsonNode kindNode = node.get("kind");
    if (kindNode == null) {
      throw TroupeException.invalid(path + ".kind: missing; expected update or delete");
    }
    DependencyKind kind = DependencyKind.fromWireName(text(kindNode, path + ".kind"));
    if (kind == null) {
      throw TroupeException.invalid(path + ".kind: expected update or delete");
    }
    JsonNode leader = node.get("leader");
    requireObject(leader, path + ".leader");
    checkFields(leader, path + ".leader.", List.of("entity", "key"));
    if (leader.get("entity") == null || leader.get("key") == null) {
      throw TroupeException.invalid(path + ".leader: needs entity and key");
    }
    String entity = text(leader.get("entity"), path + ".leader.entity");
    String key = text(leader.get("key"), path + ".leader.key");
    DependencyFunction function = null;
    JsonNode functionNode = node.get("function");
    if (functionNode != null) {
      String functionName = text(functionNode, path + ".function");
      try {
        function = DependencyFunction.parse(functionName);
      } catch (TroupeException e) {
        throw TroupeException.invalid(path + ".function: " + e.getMessage());
      }
    }
    return new DependencySpec(follower, kind, entity, key, function);
  }

  private static String typeName(String typeNameFromPath, JsonNode typeNode) {
    if (typeNameFromPath != null && !EntityId.isValidName(typeNameFromPath)) {
      throw TroupeException.invalid(
          "type: '" + typeNameFromPath + "' is not a valid type name (non-empty, no '/')");
    }
    if (typeNode == null) {
      if (typeNameFromPath == null) {
        throw TroupeException.invalid("type: missing; every spec in a file names its type");
      }
      return typeNameFromPath;
    }
    String inBody = text(typeNode, "type");
    if (typeNameFromPath != null && !typeNameFromPath.equals(inBody)) {
      throw TroupeException.invalid(
          "type: the body defines type '"
              + inBody
              + "' but the path names type '"
              + typeNameFromPath
              + "'");
    }
    return inBody;
  }

  private static KeySpec keySpec(String path, JsonNode node) {
    requireObject(node, path);
    checkFields(node, path + ".", KEY_FIELDS);
    JsonNode kindNode = node.get("kind");
    if (kindNode == null) {
      throw TroupeException.invalid(
          path + ".kind: missing; expected one of " + wireNames(KeyKind.values()));
    }
    String kindName = text(kindNode, path + ".kind");
    KeyKind kind = KeyKind.fromWireName(kindName);
    if (kind == null) {
      throw TroupeException.invalid(
          path
              + ".kind: unknown kind '"
              + kindName
              + "'; expected one of "
              + wireNames(KeyKind.values()));
    }
    boolean family = false;
    JsonNode familyNode = node.get("family");
    if (familyNode != null) {
      if (!familyNode.isBoolean()) {
        throw TroupeException.invalid(path + ".family: must be a boolean, got " + describe(familyNode));
      }
      family = familyNode.booleanValue();
    }
    boolean isFamily = family;
    return withPrefix(
        path + ".default: ", () -> new KeySpec(kind, node.get("default"), isFamily));
  }

  private static ActionSpec actionSpec(String name, JsonNode node) {
    String path = "actions." + name;
    requireObject(node, path);
    checkFields(node, path + ".", ACTION_FIELDS);
    Map<String, ParamType> params = new LinkedHashMap<>();
    forEachField(
        node.get("params"),
        path + ".params",
        (param, typeNode) -> {
          String paramPath = path + ".params." + param;
          String typeName = text(typeNode, paramPath);
          ParamType type = ParamType.fromWireName(typeName);
          if (type == null) {
            throw TroupeException.invalid(
                paramPath
                    + ": unknown parameter type '"
                    + typeName
                    + "'; expected one of "
                    + Arrays.stream(ParamType.values())
                        .map(ParamType::wireName)
                        .collect(Collectors.joining(", ")));
          }
          params.put(param, type);
        });
    List<String> preconditions = new ArrayList<>();
    JsonNode preNode = node.get("pre");
    if (preNode != null) {
      if (!preNode.isArray()) {
        throw TroupeException.invalid(
            path + ".pre: must be an array of CEL expressions, got " + describe(preNode));
      }
      for (int i = 0; i < preNode.size(); i++) {
        preconditions.add(text(preNode.get(i), path + ".pre[" + i + "]"));
      }
    }
    Map<String, ActionSpec.MemberBinding> members = new LinkedHashMap<>();
    forEachField(
        node.get("members"),
        path + ".members",
        (alias, binding) ->
            members.put(
                alias,
                ActionSpec.MemberBinding.parse(
                    path + ".members." + alias, text(binding, path + ".members." + alias))));
    Map<String, String> effects = new LinkedHashMap<>();
    forEachField(
        node.get("effect"),
        path + ".effect",
        (key, expression) -> effects.put(key, text(expression, path + ".effect." + key)));
    List<SyncSpec> sync = new ArrayList<>();
    JsonNode syncNode = node.get("sync");
    if (syncNode != null) {
      if (!syncNode.isArray()) {
        throw TroupeException.invalid(
            path + ".sync: must be an array of calls, got " + describe(syncNode));
      }
      for (int i = 0; i < syncNode.size(); i++) {
        sync.add(syncSpec(path + ".sync[" + i + "]", syncNode.get(i)));
      }
    }
    List<SyncSpec> send = new ArrayList<>();
    JsonNode sendNode = node.get("send");
    if (sendNode != null) {
      if (!sendNode.isArray()) {
        throw TroupeException.invalid(
            path + ".send: must be an array of messages, got " + describe(sendNode));
      }
      for (int i = 0; i < sendNode.size(); i++) {
        send.add(syncSpec(path + ".send[" + i + "]", sendNode.get(i)));
      }
    }
    return new ActionSpec(name, params, members, preconditions, effects, sync, send);
  }

  private static SyncSpec syncSpec(String path, JsonNode node) {
    requireObject(node, path);
    checkFields(node, path + ".", SYNC_FIELDS);
    JsonNode entity = node.get("entity");
    JsonNode action = node.get("action");
    if (entity == null) {
      throw TroupeException.invalid(path + ".entity: missing; e.g. \"Account/{from}\"");
    }
    if (action == null) {
      throw TroupeException.invalid(path + ".action: missing");
    }
    Map<String, String> arguments = new LinkedHashMap<>();
    forEachField(
        node.get("args"),
        path + ".args",
        (argument, expression) ->
            arguments.put(argument, text(expression, path + ".args." + argument)));
    return new SyncSpec(text(entity, path + ".entity"), text(action, path + ".action"), arguments);
  }

  private static List<JsonNode> readDocuments(byte[] body, boolean yaml) {
    if (body == null || body.length == 0) {
      throw TroupeException.invalid(
          "request body is empty; expected a type spec in " + (yaml ? "YAML" : "JSON"));
    }
    String format = yaml ? "YAML" : "JSON";
    List<JsonNode> documents = new ArrayList<>();
    try {
      if (yaml) {
        // One tree per YAML document. (MappingIterator would also split a top-level sequence into
        // its elements, which would make a list look like several documents.)
        try (JsonParser parser = YAML.createParser(body)) {
          JsonNode document;
          while ((document = YAML.readTree(parser)) != null) {
            // An empty document ("---" followed by nothing) carries no spec: skip it.
            if (!document.isMissingNode() && !document.isNull()) {
              documents.add(document);
            }
          }
        }
      } else {
        JsonNode document = JSON.readTree(body);
        if (document != null && !document.isMissingNode()) {
          documents.add(document);
        }
      }
    } catch (JsonProcessingException e) {
      throw TroupeException.invalid(
          "malformed " + format + location(e) + ": " + oneLine(e.getOriginalMessage()));
    } catch (IOException e) {
      throw TroupeException.invalid("unreadable " + format + ": " + e.getMessage());
    }
    if (documents.isEmpty()) {
      throw TroupeException.invalid("request body holds no type spec");
    }
    return documents;
  }

  /**
   * The parser's message on one line. SnakeYAML spreads its messages over several lines, with
   * source excerpts and caret markers; the location is reported separately, so only the sentences
   * are kept.
   */
  private static String oneLine(String message) {
    if (message == null) {
      return "unknown problem";
    }
    return message
        .lines()
        .map(String::strip)
        .filter(line -> !line.isEmpty() && !line.startsWith("in 'reader'") && !line.equals("^"))
        .collect(Collectors.joining("; "));
  }

  private static String location(JsonProcessingException e) {
    JsonLocation location = e.getLocation();
    if (location == null || location.getLineNr() < 0) {
      return "";
    }
    return " at line " + location.getLineNr() + ", column " + location.getColumnNr();
  }

  private static void checkFields(JsonNode node, String pathPrefix, List<String> expected) {
    Iterator<String> names = node.fieldNames();
    while (names.hasNext()) {
      String name = names.next();
      if (!expected.contains(name)) {
        throw TroupeException.invalid(
            pathPrefix + name + ": unknown field; expected one of " + String.join(", ", expected));
      }
    }
  }

  /** Calls {@code action} on each field of an optional object; absent means no fields. */
  private static void forEachField(
      JsonNode node, String path, BiConsumer<String, JsonNode> action) {
    if (node == null) {
      return;
    }
    requireObject(node, path);
    node.fields().forEachRemaining(field -> action.accept(field.getKey(), field.getValue()));
  }

  private static void requireObject(JsonNode node, String path) {
    if (!node.isObject()) {
      throw TroupeException.invalid(path + ": must be an object, got " + describe(node));
    }
  }

  private static String text(JsonNode node, String path) {
    if (node == null || !node.isTextual()) {
      throw TroupeException.invalid(path + ": must be a string, got " + describe(node));
    }
    return node.textValue();
  }

  private static String describe(JsonNode node) {
    if (node == null || node.isMissingNode()) {
      return "nothing";
    }
    return node.getNodeType().name().toLowerCase(Locale.ROOT);
  }

  private static String wireNames(KeyKind[] kinds) {
    return Arrays.stream(kinds).filter(KeyKind::declarable).map(KeyKind::wireName).collect(Collectors.joining(", "));
  }

  private static <T> T withPrefix(String prefix, Supplier<T> body) {
    try {
      return body.get();
    } catch (TroupeException e) {
      throw TroupeException.invalid(prefix + e.getMessage());
    }
  }
}
