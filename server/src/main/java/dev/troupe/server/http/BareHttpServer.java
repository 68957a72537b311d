package dev.troupe.server.http;

import java.nio.charset.StandardCharsets;
import java.util.concurrent.CompletableFuture;
import org.apache.pekko.actor.typed.ActorSystem;
import org.apache.pekko.http.javadsl.ServerBinding;
import org.apache.pekko.http.javadsl.model.ContentTypes;
import org.apache.pekko.http.javadsl.model.HttpMethods;
import org.apache.pekko.http.javadsl.model.HttpResponse;

/**
 * Benchmark baseline: the same HTTP stack (Pekko HTTP, low-level API, same settings) answering
 * every request with a constant JSON body. The ceiling a REST read can reach on this machine.
 */
public final class BareHttpServer implements AutoCloseable {
  private static final byte[] BODY =
      "{\"type\":\"Bench\",\"id\":\"constant\",\"state\":{\"field0\":\"constant\"},\"version\":1}"
          .getBytes(StandardCharsets.UTF_8);

  private final ServerBinding binding;

  private BareHttpServer(ServerBinding binding) {
    this.binding = binding;
  }

  public static BareHttpServer start(ActorSystem<?> system, String host, int port) {
    return start(system, host, port, BODY);
  }

  /** A bare server answering every request with {@code body}. */
  public static BareHttpServer start(ActorSystem<?> system, String host, int port, byte[] body) {
    return start(system, host, port, body, body);
  }

  /**
   * A bare server answering a {@code GET} with {@code readBody} and any other request (a write)
   * with {@code writeBody}, so that each is the size of what Troupe answers the same request (a
   * record for a read, {@code {"version","state":{}}} for a write asking {@code ?state=none}).
   */
  public static BareHttpServer start(ActorSystem<?> system, String host, int port,
      byte[] readBody, byte[] writeBody) {
    HttpResponse readResponse =
        HttpResponse.create().withEntity(ContentTypes.APPLICATION_JSON, readBody);
    HttpResponse writeResponse =
        HttpResponse.create().withEntity(ContentTypes.APPLICATION_JSON, writeBody);
    return new BareHttpServer(Bindings.bind(system, host, port, request -> {
      request.discardEntityBytes(system);
      return CompletableFuture.completedFuture(
          request.method().equals(HttpMethods.GET) ? readResponse : writeResponse);
    }));
  }

  public int port() {
    return binding.localAddress().getPort();
  }

  @Override
  public void close() {
    binding.unbind().toCompletableFuture().join();
  }
}
