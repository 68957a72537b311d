package dev.troupe.server.cli;

import com.typesafe.config.ConfigFactory;
import dev.troupe.model.Json;
import dev.troupe.server.http.BareHttpServer;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.actor.typed.javadsl.Behaviors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe serve-bare}: the benchmarks' ceiling, the same HTTP stack (Pekko HTTP, the
 * node's settings) answering every request with one constant entity of {@code --fields} fields of
 * {@code --field-bytes} characters, as a YCSB record looks, and every write (any method but
 * {@code GET}) with what Troupe answers a write asking {@code ?state=none}, as the YCSB binding's
 * writes do: {@code {"version":V,"state":{}}}, V of a commit timestamp's digits (a hybrid logical
 * clock's milliseconds shifted by its 16 logical bits). Nothing is parsed, stored or read.
 */
@Command(
    name = "serve-bare",
    mixinStandardHelpOptions = true,
    hidden = true,
    description = "Benchmark baseline: a constant entity for every request, on Troupe's HTTP stack.")
public final class ServeBareCommand implements Callable<Integer> {
  @Option(names = "--port", defaultValue = "8082", description = "HTTP port; 0 picks a free one.")
  int port;

  @Option(names = "--host", defaultValue = "127.0.0.1", description = "Address to listen on.")
  String host;

  @Option(names = "--fields", defaultValue = "10", description = "Fields of the constant entity.")
  int fields;

  @Option(names = "--field-bytes", defaultValue = "100", description = "Characters per field.")
  int fieldBytes;

  @Override
  public Integer call() throws Exception {
    ObjectNode state = Json.NODES.objectNode();
    for (int field = 0; field < fields; field++) {
      state.put("field" + field, "x".repeat(fieldBytes));
    }
    ObjectNode body = Json.NODES.objectNode();
    body.put("type", "usertable").put("id", "constant");
    body.set("state", state);
    body.put("version", 1L);
    ActorSystem<Void> system = ActorSystem.create(Behaviors.empty(), "bare", ConfigFactory.load());
    ObjectNode written = Json.NODES.objectNode();
    written.put("version", System.currentTimeMillis() << 16);
    written.putObject("state");
    BareHttpServer server = BareHttpServer.start(system, host, port, Json.writeBytes(body),
        Json.writeBytes(written));
    CountDownLatch stopped = new CountDownLatch(1);
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      server.close();
      system.terminate();
      stopped.countDown();
    }, "bare-shutdown"));
    System.out.printf("bare HTTP server listening on http://%s:%d%n", host, server.port());
    System.out.flush();
    stopped.await();
    return 0;
  }
}
