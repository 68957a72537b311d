package dev.troupe.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import dev.troupe.model.spec.ActionSpec;
import dev.troupe.model.spec.AdmissionPolicy;
import dev.troupe.model.spec.CompiledType;
import dev.troupe.model.spec.KeySpec;
import dev.troupe.model.spec.ParamType;
import dev.troupe.model.spec.SpecParser;
import dev.troupe.model.spec.SyncSpec;
import dev.troupe.model.spec.TypeSpec;
import dev.troupe.model.value.KeyKind;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

class SpecParserTest {
  /** The example of DESIGN.md, "Data model", verbatim. */
  static final String DESIGN_EXAMPLE_YAML =
      """
      type: Account
      keys: {balance: {kind: register, default: 0}, status: {kind: register, default: "new"}}
      actions:
        open:     {params: {initial: int}, pre: ["status == 'new'", "initial >= 0"],
                   effect: {status: "'open'", balance: "initial"}}
        withdraw: {params: {amount: int}, pre: ["status == 'open'", "amount > 0", "balance - amount >= 0"],
                   effect: {balance: "balance - amount"}}
        deposit:  {params: {amount: int}, pre: ["status == 'open'", "amount > 0"],
                   effect: {balance: "balance + amount"}}
      ---
      type: Transfer
      actions:
        book: {params: {from: string, to: string, amount: int},
               sync: [{entity: "Account/{from}", action: withdraw, args: {amount: amount}},
                      {entity: "Account/{to}",   action: deposit,  args: {amount: amount}}]}
      """;

  static final String ACCOUNT_JSON =
      """
      {"type": "Account", "admission": "serial",
       "keys": {"balance": {"kind": "register", "default": 0},
                "status": {"kind": "register", "default": "new"}},
       "actions": {
         "open": {"params": {"initial": "int"}, "pre": ["status == 'new'", "initial >= 0"],
                  "effect": {"status": "'open'", "balance": "initial"}},
         "withdraw": {"params": {"amount": "int"},
                      "pre": ["status == 'open'", "amount > 0", "balance - amount >= 0"],
                      "effect": {"balance": "balance - amount"}},
         "deposit": {"params": {"amount": "int"}, "pre": ["status == 'open'", "amount > 0"],
                     "effect": {"balance": "balance + amount"}}}}
      """;

  static final String TRANSFER_JSON =
      """
      {"type": "Transfer",
       "actions": {"book": {"params": {"from": "string", "to": "string", "amount": "int"},
                            "sync": [{"entity": "Account/{from}", "action": "withdraw",
                                      "args": {"amount": "amount"}},
                                     {"entity": "Account/{to}", "action": "deposit",
                                      "args": {"amount": "amount"}}]}}}
      """;

  private static byte[] bytes(String text) {
    return text.getBytes(StandardCharsets.UTF_8);
  }

  private static void assertIsAccount(TypeSpec account) {
    assertEquals("Account", account.name());
    assertEquals(AdmissionPolicy.SERIAL, account.admission());
    assertFalse(account.schemaless());
    assertEquals(List.of("balance", "status"), List.copyOf(account.keys().keySet()));
    assertEquals(new KeySpec(KeyKind.REGISTER, LongNode.valueOf(0)), account.keys().get("balance"));
    assertEquals(
        new KeySpec(KeyKind.REGISTER, TextNode.valueOf("new")), account.keys().get("status"));
    assertEquals(List.of("open", "withdraw", "deposit"), List.copyOf(account.actions().keySet()));
    ActionSpec withdraw = account.actions().get("withdraw");
    assertEquals(Map.of("amount", ParamType.INT), withdraw.params());
    assertEquals(
        List.of("status == 'open'", "amount > 0", "balance - amount >= 0"),
        withdraw.preconditions());
    assertEquals(Map.of("balance", "balance - amount"), withdraw.effects());
    ActionSpec open = account.actions().get("open");
    // Effects keep their declared order.
    assertEquals(List.of("status", "balance"), List.copyOf(open.effects().keySet()));
  }

  private static void assertIsTransfer(TypeSpec transfer) {
    assertEquals("Transfer", transfer.name());
    assertTrue(transfer.keys().isEmpty());
    ActionSpec book = transfer.actions().get("book");
    assertEquals(
        List.of("from", "to", "amount"), List.copyOf(book.params().keySet()), "parameter order");
    assertEquals(ParamType.STRING, book.params().get("from"));
    assertEquals(
        List.of(
            new SyncSpec("Account/{from}", "withdraw", Map.of("amount", "amount")),
            new SyncSpec("Account/{to}", "deposit", Map.of("amount", "amount"))),
        book.sync());
  }

  @Test
  void parsesTheDesignExampleAsYamlDocuments() {
    List<TypeSpec> specs = SpecParser.parseAll(bytes(DESIGN_EXAMPLE_YAML), true);
    assertEquals(2, specs.size());
    assertIsAccount(specs.get(0));
    assertIsTransfer(specs.get(1));
    // Both compile.
    specs.forEach(CompiledType::compile);
  }

  @Test
  void parsesEachYamlDocumentOnItsOwn() {
    String[] documents = DESIGN_EXAMPLE_YAML.split("(?m)^---$");
    assertIsAccount(SpecParser.parse("Account", bytes(documents[0]), true));
    assertIsTransfer(SpecParser.parse("Transfer", bytes(documents[1]), true));
  }

  @Test
  void parsesTheDesignExampleAsJson() {
    TypeSpec account = SpecParser.parse("Account", bytes(ACCOUNT_JSON), false);
    TypeSpec transfer = SpecParser.parse("Transfer", bytes(TRANSFER_JSON), false);
    assertIsAccount(account);
    assertIsTransfer(transfer);
    List<TypeSpec> fromYaml = SpecParser.parseAll(bytes(DESIGN_EXAMPLE_YAML), true);
    assertEquals(fromYaml, List.of(account, transfer), "JSON and YAML forms mean the same");
    assertEquals(
        List.of(account, transfer),
        SpecParser.parseAll(bytes("[" + ACCOUNT_JSON + "," + TRANSFER_JSON + "]"), false));
  }

  @Test
  void typeNameComesFromThePathWhenTheBodyOmitsIt() {
    TypeSpec spec =
        SpecParser.parse("Cart", bytes("{\"keys\": {\"items\": {\"kind\": \"set\"}}}"), false);
    assertEquals("Cart", spec.name());
  }

  @Test
  void actionNamesMayBeCelKeywordsButVariablesMayNot() {
    // "return" is a natural action name (returning a rental) and never appears in an expression.
    TypeSpec rental =
        SpecParser.parse(
            "Rental",
            bytes(
                """
                {"keys": {"out": {"kind": "register", "default": true}},
                 "actions": {"return": {"pre": ["out"], "effect": {"out": "false"}}}}
                """),
            false);
    assertEquals(List.of("return"), List.copyOf(rental.actions().keySet()));
    CompiledType.compile(rental);
    TroupeException keyword =
        assertThrows(
            TroupeException.class,
            () ->
                SpecParser.parse(
                    "Rental",
                    bytes(
                        """
                        {"keys": {"out": {"kind": "register"}},
                         "actions": {"a": {"params": {"return": "int"}, "pre": ["out"]}}}
                        """),
                    false));
    assertTrue(
        keyword
            .getMessage()
            .startsWith(
                "actions.a.params.return: parameter name 'return' is a reserved word of CEL"),
        keyword.getMessage());
  }

  @Test
  void kindDefaultsAreFilledIn() {
    TypeSpec spec =
        SpecParser.parse(
            "Account",
            bytes(
                """
                {"keys": {"owner": {"kind": "register"}, "visits": {"kind": "counter"},
                          "tags": {"kind": "set"}, "labels": {"kind": "set", "default": ["b", "a", "b"]},
                          "limit": {"kind": "counter", "default": -5}}}
                """),
            false);
    assertEquals(NullNode.getInstance(), spec.keys().get("owner").defaultValue());
    assertEquals(LongNode.valueOf(0), spec.keys().get("visits").defaultValue());
    assertEquals(Json.parse("[]"), spec.keys().get("tags").defaultValue());
    assertEquals(
        Json.parse("[\"a\",\"b\"]"),
        spec.keys().get("labels").defaultValue(),
        "set defaults are de-duplicated and ordered like rendered sets");
    assertEquals(LongNode.valueOf(-5), spec.keys().get("limit").defaultValue());
  }

  @Test
  void canonicalJsonRoundTrips() {
    for (TypeSpec spec : SpecParser.parseAll(bytes(DESIGN_EXAMPLE_YAML), true)) {
      String canonical = Json.write(spec.toJson());
      TypeSpec again = SpecParser.parse(spec.name(), bytes(canonical), false);
      assertEquals(spec, again);
      assertEquals(canonical, Json.write(again.toJson()), "canonical form is a fixed point");
    }
    assertEquals(
        Json.parse(
            """
            {"type":"Account","admission":"serial",
             "keys":{"balance":{"kind":"register","default":0},"status":{"kind":"register","default":"new"}},
             "actions":{"open":{"params":{"initial":"int"},"pre":["status == 'new'","initial >= 0"],
                                "effect":{"status":"'open'","balance":"initial"}},
                        "withdraw":{"params":{"amount":"int"},
                                    "pre":["status == 'open'","amount > 0","balance - amount >= 0"],
                                    "effect":{"balance":"balance - amount"}},
                        "deposit":{"params":{"amount":"int"},"pre":["status == 'open'","amount > 0"],
                                   "effect":{"balance":"balance + amount"}}}}
            """),
        SpecParser.parse("Account", bytes(ACCOUNT_JSON), false).toJson());
  }

  @Test
  void schemalessTypes() {
    TypeSpec spec = SpecParser.parse("Usertable", bytes("{\"schemaless\": true}"), false);
    assertTrue(spec.schemaless());
    assertEquals(TypeSpec.schemaless("Usertable"), spec);
    assertEquals(
        Json.parse("{\"type\":\"Usertable\",\"admission\":\"serial\",\"schemaless\":true}"),
        spec.toJson());
    assertEquals(spec, SpecParser.fromJson("Usertable", spec.toJson()));
    assertEquals(spec, SpecParser.parse("Usertable", bytes("schemaless: true\n"), true));
  }

  @Test
  void specsAreImmutable() {
    TypeSpec spec = SpecParser.parse("Account", bytes(ACCOUNT_JSON), false);
    assertThrows(UnsupportedOperationException.class, () -> spec.keys().remove("balance"));
    assertThrows(
        UnsupportedOperationException.class,
        () -> spec.actions().get("open").preconditions().add("true"));
    TypeSpec profile =
        SpecParser.parse(
            "Profile",
            bytes("{\"keys\": {\"card\": {\"kind\": \"register\", \"default\": {\"n\": 1}}}}"),
            false);
    KeySpec card = profile.keys().get("card");
    ((ObjectNode) card.defaultValue()).put("n", 2);
    ((ObjectNode) card.toJson().get("default")).put("n", 2);
    ((ObjectNode) profile.toJson().get("keys").get("card").get("default")).put("n", 2);
    assertEquals(Json.parse("{\"n\":1}"), card.defaultValue());
  }

  /** Each row: what is wrong, the spec, and the text the message must contain (its path). */
  private static final String CART_KEYS =
      "`keys`: {`item`: {`kind`: `register`, `family`: true}, `n`: {`kind`: `counter`}}";

  static Stream<Arguments> badSpecs() {
    return Stream.of(
        Arguments.of("dependencies not a list", "{" + CART_KEYS + ", `dependencies`: {}}",
            "dependencies: must be a list"),
        Arguments.of("dependency on an undeclared key", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `nope`, `kind`: `delete`, `leader`: {`entity`: `P/{id}`, `key`: `k`}}]}",
            "dependencies[0].follower"),
        Arguments.of("family follower without variable", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `item`, `kind`: `delete`, `leader`: {`entity`: `P/{id}`, `key`: `k`}}]}",
            "dependencies[0].follower"),
        Arguments.of("update dependency on a counter", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `n`, `kind`: `update`, `function`: `sum`, `leader`: {`entity`:"
            + " `P/{id}`, `key`: `k`}}]}", "must be a register"),
        Arguments.of("unknown template variable", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `item[p]`, `kind`: `update`, `function`: `replicate`, `leader`:"
            + " {`entity`: `P/{q}`, `key`: `k`}}]}", "{q} is neither"),
        Arguments.of("update without function", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `item[p]`, `kind`: `update`, `leader`: {`entity`: `P/{p}`, `key`:"
            + " `k`}}]}", "dependencies[0].function"),
        Arguments.of("unknown dependency function", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `item[p]`, `kind`: `update`, `function`: `avg`, `leader`: {`entity`:"
            + " `P/{p}`, `key`: `k`}}]}", "dependencies[0].function: unknown dependency function"),
        Arguments.of("bad cel function", "{" + CART_KEYS + ", `dependencies`: [{"
            + "`follower`: `item[p]`, `kind`: `update`, `function`: `cel:new_value +`, `leader`:"
            + " {`entity`: `P/{p}`, `key`: `k`}}]}", "dependencies[0].function: cel:"),
        Arguments.of("key of kind dependencies", "{`keys`: {`a`: {`kind`: `dependencies`}}}",
            "keys.a.kind: unknown kind 'dependencies'"),
        Arguments.of(
            "unknown top-level field", "{`keys`: {}, `colour`: 1}", "colour: unknown field"),
        Arguments.of("keys is not an object", "{`keys`: []}", "keys: must be an object"),
        Arguments.of(
            "unknown key kind",
            "{`keys`: {`a`: {`kind`: `map`}}}",
            "keys.a.kind: unknown kind 'map'"),
        Arguments.of("key without kind", "{`keys`: {`a`: {}}}", "keys.a.kind: missing"),
        Arguments.of(
            "kind of the wrong JSON type",
            "{`keys`: {`a`: {`kind`: 3}}}",
            "keys.a.kind: must be a string, got number"),
        Arguments.of(
            "unknown field in a key",
            "{`keys`: {`a`: {`kind`: `set`, `size`: 3}}}",
            "keys.a.size: unknown field"),
        Arguments.of(
            "counter default not an integer",
            "{`keys`: {`n`: {`kind`: `counter`, `default`: 1.5}}}",
            "keys.n.default: the default of a counter must be a 64-bit integer"),
        Arguments.of(
            "counter default a string",
            "{`keys`: {`n`: {`kind`: `counter`, `default`: `0`}}}",
            "keys.n.default: the default of a counter"),
        Arguments.of(
            "set default not an array",
            "{`keys`: {`s`: {`kind`: `set`, `default`: {}}}}",
            "keys.s.default: the default of a set must be an array"),
        Arguments.of(
            "key name not an identifier",
            "{`keys`: {`my-key`: {`kind`: `register`}}}",
            "keys.my-key: key name 'my-key' is not an identifier"),
        Arguments.of(
            "key name starting with a digit",
            "{`keys`: {`1st`: {`kind`: `register`}}}",
            "keys.1st: key name"),
        Arguments.of(
            "reserved key name state",
            "{`keys`: {`state`: {`kind`: `register`}}}",
            "keys.state: key name 'state' is reserved"),
        Arguments.of(
            "CEL keyword as key name",
            "{`keys`: {`in`: {`kind`: `register`}}}",
            "keys.in: key name 'in' is a reserved word of CEL"),
        Arguments.of(
            "unknown parameter type",
            action("{`params`: {`amount`: `integer`}, `pre`: [`true`]}"),
            "actions.a.params.amount: unknown parameter type 'integer'"),
        Arguments.of(
            "parameter name not an identifier",
            action("{`params`: {`a b`: `int`}, `pre`: [`true`]}"),
            "actions.a.params.a b: parameter name"),
        Arguments.of(
            "parameter named like a key",
            action("{`params`: {`balance`: `int`}, `pre`: [`true`]}"),
            "actions.a.params.balance: parameter has the name of a key"),
        Arguments.of(
            "reserved parameter name params",
            action("{`params`: {`params`: `int`}, `pre`: [`true`]}"),
            "actions.a.params.params: parameter name 'params' is reserved"),
        Arguments.of(
            "preconditions not an array",
            action("{`pre`: `balance > 0`}"),
            "actions.a.pre: must be an array"),
        Arguments.of(
            "precondition not a string",
            action("{`pre`: [`balance > 0`, 5]}"),
            "actions.a.pre[1]: must be a string, got number"),
        Arguments.of(
            "blank precondition",
            action("{`pre`: [`true`, ` `]}"),
            "actions.a.pre[1]: empty expression"),
        Arguments.of(
            "effect on an undeclared key",
            action("{`effect`: {`balanse`: `1`}}"),
            "actions.a.effect.balanse: no such key; declared keys: balance"),
        Arguments.of(
            "effect not a string",
            action("{`effect`: {`balance`: 1}}"),
            "actions.a.effect.balance: must be a string, got number"),
        Arguments.of("empty action", action("{}"), "actions.a: an action needs at least one"),
        Arguments.of(
            "action with only parameters",
            action("{`params`: {`x`: `int`}}"),
            "actions.a: an action needs at least one"),
        Arguments.of(
            "unknown field in an action",
            action("{`pre`: [`true`], `post`: [`true`]}"),
            "actions.a.post: unknown field"),
        Arguments.of(
            "action name not an identifier",
            "{`keys`: {`balance`: {`kind`: `register`}}, `actions`: {`do-it`: {`pre`: [`true`]}}}",
            "actions.do-it: action name"),
        Arguments.of(
            "sync placeholder names no parameter",
            action(
                "{`params`: {`to`: `string`},"
                    + " `sync`: [{`entity`: `Account/{from}`, `action`: `deposit`}]}"),
            "actions.a.sync[0].entity: placeholder {from} names no parameter"),
        Arguments.of(
            "sync placeholder of a list parameter",
            action(
                "{`params`: {`to`: `list`},"
                    + " `sync`: [{`entity`: `Account/{to}`, `action`: `deposit`}]}"),
            "actions.a.sync[0].entity: placeholder {to} must be a string or int parameter"),
        Arguments.of(
            "sync entity without type",
            action(
                "{`params`: {`to`: `string`}, `sync`: [{`entity`: `{to}`, `action`: `deposit`}]}"),
            "actions.a.sync[0].entity: '{to}' must look like Type/id"),
        Arguments.of(
            "sync entity with unbalanced brace",
            action(
                "{`params`: {`to`: `string`},"
                    + " `sync`: [{`entity`: `Account/{to`, `action`: `deposit`}]}"),
            "actions.a.sync[0].entity: '{' without '}'"),
        Arguments.of(
            "sync without action",
            action("{`sync`: [{`entity`: `Account/a`}]}"),
            "actions.a.sync[0].action: missing"),
        Arguments.of(
            "body names another type than the path",
            "{`type`: `Wallet`, `keys`: {`a`: {`kind`: `set`}}}",
            "type: the body defines type 'Wallet' but the path names type 'Account'"),
        Arguments.of(
            "unknown admission policy",
            "{`admission`: `eventual`, `keys`: {`a`: {`kind`: `set`}}}",
            "admission: unknown policy 'eventual'; expected one of serial"),
        Arguments.of(
            "schemaless with keys",
            "{`schemaless`: true, `keys`: {`a`: {`kind`: `set`}}}",
            "schemaless: a schemaless type"),
        Arguments.of(
            "schemaless not a boolean",
            "{`schemaless`: `yes`}",
            "schemaless: must be a boolean, got string"),
        Arguments.of("type with nothing", "{}", "a type declares keys or actions"),
        Arguments.of("spec not an object", "[1, 2]", "a type spec must be an object, got array"),
        Arguments.of("malformed JSON", "{`keys`: ", "malformed JSON"),
        Arguments.of(
            "duplicate field",
            "{`keys`: {`a`: {`kind`: `set`}, `a`: {`kind`: `counter`}}}",
            "Duplicate field 'a'"),
        Arguments.of("trailing garbage", "{`schemaless`: true} {}", "malformed JSON"));
  }

  /** A spec with key {@code balance} and the given JSON as action {@code a}. */
  private static String action(String actionJson) {
    return "{`keys`: {`balance`: {`kind`: `register`}}, `actions`: {`a`: " + actionJson + "}}";
  }

  /** JSON written with backquotes for double quotes, which keeps the table readable. */
  private static String quoted(String text) {
    return text.replace('`', '"');
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badSpecs")
  void rejectsBadSpecsNamingThePath(String problem, String spec, String expectedInMessage) {
    TroupeException error =
        assertThrows(
            TroupeException.class, () -> SpecParser.parse("Account", bytes(quoted(spec)), false));
    assertEquals(ErrorCode.INVALID_REQUEST, error.code());
    assertNotNull(error.getMessage());
    assertTrue(
        error.getMessage().contains(expectedInMessage),
        () -> problem + ": expected message containing <" + expectedInMessage + "> but was <"
            + error.getMessage() + ">");
  }

  @Test
  void parsesDeclaredDependenciesAndInstantiatesThemPerEntity() {
    TypeSpec spec = SpecParser.parse("Cart", bytes(quoted("{" + CART_KEYS + ", `dependencies`:"
        + " [{`follower`: `item[p]`, `kind`: `update`, `function`: `replicate`, `leader`:"
        + " {`entity`: `Product/{p}`, `key`: `price`}}]}")), false);
    assertEquals(spec, SpecParser.fromJson("Cart", spec.toJson()), "round trip");
    dev.troupe.model.spec.CompiledType type = dev.troupe.model.spec.CompiledType.compile(spec);
    dev.troupe.model.EntityId cart = dev.troupe.model.EntityId.parse("Cart/c1");
    var declared = type.declaredDependencies(cart, "item[p7]");
    assertEquals(1, declared.size());
    assertEquals("Product/p7.price", declared.get(0).leader().toString());
    assertEquals("Cart/c1.item[p7]", declared.get(0).follower().toString());
    assertTrue(type.declaredDependencies(cart, "n").isEmpty());
    TroupeException slash = assertThrows(TroupeException.class,
        () -> type.declaredDependencies(cart, "item[a/b]"));
    assertEquals(ErrorCode.INVALID_REQUEST, slash.code(), "a member that makes no entity id");
  }

  @Test
  void parsesPsacBoundsAndRoundTripsThem() {
    TypeSpec spec = SpecParser.parse("Hot", bytes(quoted(
        "{`admission`: `psac`, `psac`: {`maxInFlight`: 6, `maxOvertakes`: 3},"
            + " `keys`: {`n`: {`kind`: `counter`}}}")), false);
    assertEquals(dev.troupe.model.spec.AdmissionPolicy.PSAC, spec.admission());
    assertEquals(new dev.troupe.model.spec.PsacSettings(6, 3), spec.psac());
    assertEquals(spec, SpecParser.fromJson("Hot", spec.toJson()));
    TypeSpec defaults = SpecParser.parse("Hot", bytes(quoted(
        "{`admission`: `psac`, `keys`: {`n`: {`kind`: `counter`}}}")), false);
    assertEquals(dev.troupe.model.spec.PsacSettings.DEFAULTS, defaults.psac());
  }

  @ParameterizedTest(name = "{0}")
  @MethodSource("badPsacSpecs")
  void rejectsBadPsacBounds(String problem, String spec, String expectedInMessage) {
    rejectsBadSpecsNamingThePath(problem, spec, expectedInMessage);
  }

  static Stream<Arguments> badPsacSpecs() {
    String keys = ", `keys`: {`n`: {`kind`: `counter`}}}";
    return Stream.of(
        Arguments.of("bounds without psac", "{`psac`: {`maxInFlight`: 2}" + keys,
            "psac: bounds only apply"),
        Arguments.of("zero in flight", "{`admission`: `psac`, `psac`: {`maxInFlight`: 0}" + keys,
            "psac.maxInFlight must be 1 to 10"),
        Arguments.of("too many in flight", "{`admission`: `psac`, `psac`: {`maxInFlight`: 11}" + keys,
            "psac.maxInFlight must be 1 to 10"),
        Arguments.of("negative overtakes", "{`admission`: `psac`, `psac`: {`maxOvertakes`: -1}" + keys,
            "psac.maxOvertakes"),
        Arguments.of("unknown bound", "{`admission`: `psac`, `psac`: {`depth`: 2}" + keys,
            "psac.depth: unknown field"),
        Arguments.of("bounds not an object", "{`admission`: `psac`, `psac`: 3" + keys,
            "psac: must be an object"));
  }

  @Test
  void rejectsBadYaml() {
    TroupeException malformed =
        assertThrows(
            TroupeException.class,
            () -> SpecParser.parse("Account", bytes("keys: {balance: [\n"), true));
    assertEquals(ErrorCode.INVALID_REQUEST, malformed.code());
    assertTrue(malformed.getMessage().startsWith("malformed YAML"), malformed.getMessage());

    TroupeException twoDocuments =
        assertThrows(
            TroupeException.class,
            () -> SpecParser.parse("Account", bytes(DESIGN_EXAMPLE_YAML), true));
    assertTrue(twoDocuments.getMessage().contains("expected one type spec, found 2"));

    TroupeException unknownKind =
        assertThrows(
            TroupeException.class,
            () -> SpecParser.parse("Account", bytes("keys:\n  balance: {kind: registre}\n"), true));
    assertTrue(unknownKind.getMessage().startsWith("keys.balance.kind: unknown kind 'registre'"));

    TroupeException empty =
        assertThrows(TroupeException.class, () -> SpecParser.parse("Account", new byte[0], true));
    assertEquals(ErrorCode.INVALID_REQUEST, empty.code());
  }

  @Test
  void parseAllNamesTheDocument() {
    String documents =
        "type: A\nschemaless: true\n---\ntype: B\nkeys: {x: {kind: tree}}\n";
    TroupeException error =
        assertThrows(TroupeException.class, () -> SpecParser.parseAll(bytes(documents), true));
    assertTrue(
        error.getMessage().startsWith("document 2: keys.x.kind: unknown kind"), error.getMessage());

    TroupeException missingType =
        assertThrows(
            TroupeException.class,
            () -> SpecParser.parseAll(bytes("schemaless: true\n"), true));
    assertTrue(missingType.getMessage().startsWith("document 1: type: missing"));

    TroupeException duplicate =
        assertThrows(
            TroupeException.class,
            () ->
                SpecParser.parseAll(
                    bytes("type: A\nschemaless: true\n---\ntype: A\nschemaless: true\n"), true));
    assertTrue(duplicate.getMessage().contains("type A is already defined by document 1"));
  }

  @Test
  void programmaticConstructionIsValidatedToo() {
    TroupeException error =
        assertThrows(
            TroupeException.class,
            () ->
                new TypeSpec(
                    "Account",
                    Map.of("balance", KeySpec.of(KeyKind.REGISTER)),
                    Map.of(
                        "withdraw",
                        new ActionSpec("withdraw", Map.of(), List.of(), Map.of("owner", "1"))),
                    AdmissionPolicy.SERIAL,
                    false));
    assertTrue(error.getMessage().startsWith("actions.withdraw.effect.owner: no such key"));
    assertThrows(
        TroupeException.class,
        () -> new TypeSpec("Bad/Name", Map.of(), Map.of(), AdmissionPolicy.SERIAL, true));
  }
}
