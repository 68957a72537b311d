package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;
import site.ycsb.ByteIterator;
import site.ycsb.Status;
import site.ycsb.StringByteIterator;

/**
 * What the YCSB binding asks the server (issue 20's lean answers): a write asks for none of the
 * state back ({@code ?state=none}), a read of named fields asks for those keys only ({@code
 * ?key=}), a read of every field asks for the whole state. Against a stub HTTP server that records
 * the requests, so no Troupe is started.
 */
class RestEntityDbTest {
  private static final byte[] RECORD = ("{\"type\":\"usertable\",\"id\":\"user1\",\"state\":"
      + "{\"field0\":\"zero\",\"field1\":\"one\",\"field2\":\"two\"},\"version\":7}")
      .getBytes(StandardCharsets.UTF_8);
  private static final byte[] WRITTEN = "{\"version\":8,\"state\":{}}"
      .getBytes(StandardCharsets.UTF_8);

  @Test
  void writesAskForNoStateAndReadsOfNamedFieldsForThoseKeys() throws Exception {
    asksLeanAnswers(new RestEntityDb());
  }

  /** The Java client's binding (--driver java-client) asks the same. */
  @Test
  void theJavaClientsBindingAsksTheSame() throws Exception {
    asksLeanAnswers(new ClientEntityDb());
  }

  private static void asksLeanAnswers(site.ycsb.DB database) throws Exception {
    List<String> requests = new CopyOnWriteArrayList<>();
    HttpServer server = HttpServer.create(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      requests.add(exchange.getRequestMethod() + " " + exchange.getRequestURI());
      exchange.getRequestBody().readAllBytes();
      // A stub: it answers every GET with the whole record, whatever the projection.
      byte[] body = exchange.getRequestMethod().equals("GET") ? RECORD : WRITTEN;
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    try {
      Properties properties = new Properties();
      properties.setProperty(RestEntityDb.HOST_PROPERTY, "127.0.0.1");
      properties.setProperty(RestEntityDb.PORT_PROPERTY,
          Integer.toString(server.getAddress().getPort()));
      database.setProperties(properties);
      database.init();

      Map<String, ByteIterator> values = new HashMap<>();
      values.put("field1", new StringByteIterator("uno"));
      assertEquals(Status.OK, database.update("usertable", "user1", values));
      values.put("field1", new StringByteIterator("uno"));
      assertEquals(Status.OK, database.insert("usertable", "user2", values));

      Map<String, ByteIterator> named = new HashMap<>();
      Set<String> fields = new LinkedHashSet<>(List.of("field2", "field0"));
      assertEquals(Status.OK, database.read("usertable", "user1", fields, named));
      assertEquals(Set.of("field0", "field2"), named.keySet());
      assertEquals("two", named.get("field2").toString());

      Map<String, ByteIterator> all = new HashMap<>();
      assertEquals(Status.OK, database.read("usertable", "user1", null, all));
      assertEquals(Set.of("field0", "field1", "field2"), all.keySet());

      assertEquals(List.of(
          "PATCH /v1/entities/usertable/user1?state=none",
          "PATCH /v1/entities/usertable/user2?state=none",
          "GET /v1/entities/usertable/user1?key=field2&key=field0",
          "GET /v1/entities/usertable/user1"), requests);
      assertEquals("?state=none", RestEntityDb.projection(Set.of()));
    } finally {
      database.cleanup();
      server.stop(0);
    }
  }

  /**
   * A refusal for overload (429, or 503 as the memory budget answers) is counted apart from other
   * failures, for writes as for reads, so that a load that fails tells which it met.
   */
  @Test
  void overloadIsToldApartFromOtherFailures() throws Exception {
    int[] status = {429};
    HttpServer server = HttpServer.create(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    server.createContext("/", exchange -> {
      exchange.getRequestBody().readAllBytes();
      byte[] body = "{\"error\":{\"code\":\"x\"}}".getBytes(StandardCharsets.UTF_8);
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(status[0], body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    RestEntityDb database = new RestEntityDb();
    try {
      Properties properties = new Properties();
      properties.setProperty(RestEntityDb.PORT_PROPERTY,
          Integer.toString(server.getAddress().getPort()));
      database.setProperties(properties);
      database.init();
      Map<String, ByteIterator> values = new HashMap<>();
      for (int code : new int[] {429, 503, 500, 400}) {
        status[0] = code;
        Status expected = code == 429 || code == 503 ? Status.SERVICE_UNAVAILABLE : Status.ERROR;
        values.put("field1", new StringByteIterator("uno"));
        assertEquals(expected, database.insert("usertable", "user1", values), "insert " + code);
        values.put("field1", new StringByteIterator("uno"));
        assertEquals(expected, database.update("usertable", "user1", values), "update " + code);
        assertEquals(expected, database.read("usertable", "user1", null, new HashMap<>()),
            "read " + code);
      }
    } finally {
      database.cleanup();
      server.stop(0);
    }
  }
}
