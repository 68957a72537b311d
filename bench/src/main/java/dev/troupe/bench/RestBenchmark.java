package dev.troupe.bench;

import com.typesafe.config.Config;
import com.typesafe.config.ConfigValueFactory;
import dev.troupe.model.EntityId;
import dev.troupe.model.Json;
import dev.troupe.runtime.RuntimeSettings;
import dev.troupe.runtime.Troupe;
import dev.troupe.server.http.BareHttpServer;
import dev.troupe.server.http.HttpSettings;
import dev.troupe.server.http.TroupeServer;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/**
 * {@code troupe bench rest}: {@code GET} of a cached entity over the REST API against a bare HTTP
 * server that answers every request with a constant body: the very bytes Troupe answers.
 *
 * <p><b>Troupe</b>: a real {@link TroupeServer} on 127.0.0.1 over an engine in a temporary
 * directory; every request is routed, validated, read from the object cache and rendered as JSON.
 *
 * <p><b>Baseline</b>: {@link BareHttpServer} bound on the same actor system, hence the same Pekko
 * HTTP stack, settings and dispatcher, returning as a constant body the bytes Troupe answered to
 * the same GET (a record of {@code --fields} fields of {@code --field-bytes} characters, 1 KB by
 * default as YCSB's): the most any HTTP endpoint on this stack can do on this machine.
 *
 * <p>Fair because both are driven by the same client ({@link HttpConnection}, one keep-alive
 * connection per worker), at the same concurrency, one at a time, alternating A B A B; the client
 * runs in this JVM for both. Goal: Troupe throughput at least 0.7 of the bare server's. Rounds
 * rotate, wait for an idle machine and report this JVM's CPU per side ({@link
 * AlternatingComparison}): servers and client share this JVM, so a side's CPU includes the
 * client, the same for every side.
 *
 * <p><b>Secured</b>: a second {@link TroupeServer} over the same engine that requires a bearer
 * token (every request here carries one): its throughput over the open server's prices
 * authentication on the read path (issue 15's goal: at least 0.95).
 */
@Command(
    name = "rest",
    mixinStandardHelpOptions = true,
    description = "GET of a cached entity over REST vs a bare HTTP server (constant body) on the "
        + "same HTTP stack, same client and concurrency. Goal: troupe / bare throughput >= 0.7.")
final class RestBenchmark extends Benchmark {
  static final Goal GOAL = Goal.atLeast(0.7);
  static final Goal SECURED_GOAL = Goal.atLeast(0.95);
  private static final String HOST = "127.0.0.1";
  private static final EntityId ENTITY = new EntityId("Bench", "constant");

  @Option(names = "--threads", defaultValue = "64",
      description = "Concurrent clients, one keep-alive connection each"
          + " (default: ${DEFAULT-VALUE}).")
  int threads;

  @Option(names = "--fields", defaultValue = "10",
      description = "Fields of the entity read (default: ${DEFAULT-VALUE}).")
  int fields;

  @Option(names = "--field-bytes", defaultValue = "100",
      description = "Characters per field (default: ${DEFAULT-VALUE}; 10 of 100 is YCSB's 1 KB"
          + " record).")
  int fieldBytes;

  @Mixin AlternationOptions alternation;

  @Override
  BenchReport run() throws Exception {
    AlternatingComparison.Settings settings = alternation.settings(threads);
    BenchReport report = new BenchReport("rest",
        "GET of a cached entity over REST vs a bare HTTP server on the same stack");
    settings.describe(report);
    if (fields < 1 || fieldBytes < 1) {
      throw new IllegalArgumentException("--fields and --field-bytes must be positive");
    }
    report.parameter("fields", fields).parameter("field_bytes", fieldBytes);
    try (TemporaryDirectory work = TemporaryDirectory.create("rest");
        Troupe troupe = Troupe.open(RuntimeSettings.forDirectory(work.resolve("data")))) {
      Map<String, com.fasterxml.jackson.databind.JsonNode> record = new java.util.LinkedHashMap<>();
      for (int field = 0; field < fields; field++) {
        record.put("field" + field, Json.NODES.textNode(
            Character.toString('a' + field % 26).repeat(fieldBytes)));
      }
      troupe.patch(ENTITY, record).join();
      Config config = troupe.settings().config()
          .withValue("troupe.http.host", ConfigValueFactory.fromAnyRef(HOST))
          .withValue("troupe.http.port", ConfigValueFactory.fromAnyRef(0));
      SecuredAccess access = SecuredAccess.mint();
      Config securedConfig = config.withValue("troupe.http.auth.tokens",
          com.typesafe.config.ConfigFactory.parseString("tokens = " + access.tokensSetting())
              .getValue("tokens"));
      String path = "/v1/entities/" + ENTITY.type() + "/" + ENTITY.id();
      try (TroupeServer server = TroupeServer.start(troupe, HttpSettings.fromConfig(config));
          TroupeServer secured = TroupeServer.start(troupe,
              HttpSettings.fromConfig(securedConfig));
          BareHttpServer bare = BareHttpServer.start(troupe.actorSystem(), HOST, 0,
              new HttpGets("troupe_rest", server.port(), path, null).answer())) {
        HttpGets troupeGets = new HttpGets("troupe_rest", server.port(), path, null);
        HttpGets securedGets = new HttpGets("troupe_rest_secured", secured.port(), path,
            access.token());
        HttpGets bareGets = new HttpGets("bare_http", bare.port(), "/", null);
        report.result(troupeGets.name(), "response_bytes", troupeGets.probe());
        report.result(securedGets.name(), "response_bytes", securedGets.probe());
        report.result(bareGets.name(), "response_bytes", bareGets.probe());
        new HttpGets("anonymous", secured.port(), path, null).expectStatus(401);
        Map<String, AlternatingComparison.Outcome> outcomes = AlternatingComparison.run("rest",
            settings, List.of(troupeGets, securedGets, bareGets), report);
        AlternatingComparison.ratio(report, "troupe_rest / bare_http throughput",
            outcomes.get(troupeGets.name()), outcomes.get(bareGets.name()), 1, GOAL);
        AlternatingComparison.ratio(report, "troupe_rest_secured / troupe_rest throughput",
            outcomes.get(securedGets.name()), outcomes.get(troupeGets.name()), 1, SECURED_GOAL);
      }
    }
    return report;
  }

  /** GETs of one path on one server; each round opens one connection per worker. */
  private record HttpGets(String name, int port, String path, String bearerToken)
      implements AlternatingComparison.Contender {

    /** One request outside the measurement: checks the server answers 200; returns body size. */
    int probe() throws IOException {
      return answer().length;
    }

    /** The body of one answer (outside the measurement), checked to be 200. */
    byte[] answer() throws IOException {
      try (HttpConnection connection = new HttpConnection(HOST, port, bearerToken)) {
        return check(connection.get(path)).body();
      }
    }

    /** Fails the run unless one request answers {@code status} (e.g. 401 without a token). */
    void expectStatus(int status) throws IOException {
      try (HttpConnection connection = new HttpConnection(HOST, port, bearerToken)) {
        HttpConnection.Response response = connection.get(path);
        if (response.status() != status) {
          throw new BenchmarkException(name + ": GET " + path + " answered "
              + response.status() + " instead of " + status + ": " + response.text());
        }
      }
    }

    private HttpConnection.Response check(HttpConnection.Response response) {
      if (response.status() != 200) {
        throw new BenchmarkException(name + ": GET " + path + " answered " + response.status()
            + ": " + response.text());
      }
      return response;
    }

    @Override
    public AlternatingComparison.Session open(int workers) {
      HttpConnection[] connections = new HttpConnection[workers];
      for (int worker = 0; worker < workers; worker++) {
        connections[worker] = new HttpConnection(HOST, port, bearerToken);
      }
      return new AlternatingComparison.Session() {
        @Override
        public void perform(int worker, long sequence) throws IOException {
          check(connections[worker].get(path));
        }

        @Override
        public void close() {
          for (HttpConnection connection : connections) {
            connection.close();
          }
        }
      };
    }
  }
}
