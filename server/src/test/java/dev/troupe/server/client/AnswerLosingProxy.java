package dev.troupe.server.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

/**
 * A small HTTP/1.1 proxy on loopback in front of a real server that forwards each request, or
 * loses its answer after the server did the work (what a dropped connection does), or answers
 * for the server, as a plan decides per request. The Java client's retry tests use it to make a
 * write's answer go missing after the server committed it and watch the client retry with its
 * idempotency key (as the Python client's tests do with theirs).
 *
 * <p>One request per connection: every answer says {@code Connection: close}, so each attempt
 * of the client is a request the proxy sees and records ({@link #seen()}). Requests and answers
 * with a {@code Content-Length} body (or a chunked answer) only: what the client and the server
 * send.
 *
 * <p>Concurrency: a thread per connection (virtual); the plan is called from them.
 */
final class AnswerLosingProxy implements AutoCloseable {
  /** A request as the proxy received it (header names in lower case). */
  record Seen(String method, String path, Map<String, String> headers, byte[] body) {
    String header(String name) {
      return headers.get(name.toLowerCase(Locale.ROOT));
    }
  }

  /** What to do with a request. */
  sealed interface Plan {}

  /** Forward it and relay the answer. */
  record Forward() implements Plan {}

  /** Forward it, let the server answer, and close the client's connection without an answer. */
  record LoseAnswer() implements Plan {}

  /** Answer it without asking the server. */
  record Answer(int status, String json, Map<String, String> headers) implements Plan {}

  static final Plan FORWARD = new Forward();
  static final Plan LOSE_ANSWER = new LoseAnswer();

  private final int targetPort;
  private final Function<Seen, Plan> plan;
  private final ServerSocket listener;
  private final List<Seen> seen = new CopyOnWriteArrayList<>();

  AnswerLosingProxy(int targetPort, Function<Seen, Plan> plan) throws IOException {
    this.targetPort = targetPort;
    this.plan = plan;
    this.listener = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread.ofVirtual().name("answer-losing-proxy").start(this::accept);
  }

  String url() {
    return "http://127.0.0.1:" + listener.getLocalPort();
  }

  /** Every request received so far, in order. */
  List<Seen> seen() {
    return List.copyOf(seen);
  }

  /** A plan that loses the answers of the first {@code count} requests that match. */
  static Function<Seen, Plan> loseFirst(int count, java.util.function.Predicate<Seen> matches) {
    int[] lost = {0};
    return request -> {
      synchronized (lost) {
        if (matches.test(request) && lost[0] < count) {
          lost[0]++;
          return LOSE_ANSWER;
        }
        return FORWARD;
      }
    };
  }

  /**
   * A plan that loses the answer of the first attempt of every keyed write that matches (the
   * first request with its {@code Idempotency-Key}); retries, with the same key, are forwarded.
   */
  static Function<Seen, Plan> loseFirstAttemptOfEachKey(
      java.util.function.Predicate<Seen> matches) {
    java.util.Set<String> keys = java.util.concurrent.ConcurrentHashMap.newKeySet();
    return request -> {
      String key = request.header("Idempotency-Key");
      return key != null && matches.test(request) && keys.add(key) ? LOSE_ANSWER : FORWARD;
    };
  }

  /** A plan that answers the first {@code count} matching requests itself with {@code answer}. */
  static Function<Seen, Plan> answerFirst(int count, Answer answer,
      java.util.function.Predicate<Seen> matches) {
    int[] given = {0};
    return request -> {
      synchronized (given) {
        if (matches.test(request) && given[0] < count) {
          given[0]++;
          return answer;
        }
        return FORWARD;
      }
    };
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket connection = listener.accept();
        Thread.ofVirtual().start(() -> handle(connection));
      } catch (IOException closed) {
        return;
      }
    }
  }

  private void handle(Socket connection) {
    try (connection) {
      InputStream in = connection.getInputStream();
      Message request = Message.read(in, true);
      if (request == null) {
        return;
      }
      String[] requestLine = request.head().split("\r\n", 2)[0].split(" ");
      Seen received = new Seen(requestLine[0], requestLine[1], request.headers(), request.body());
      seen.add(received);
      Plan decided = plan.apply(received);
      OutputStream out = connection.getOutputStream();
      if (decided instanceof Answer answer) {
        byte[] body = answer.json().getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder("HTTP/1.1 " + answer.status() + " X\r\n")
            .append("Content-Type: application/json\r\nContent-Length: ").append(body.length)
            .append("\r\nConnection: close\r\n");
        answer.headers().forEach((name, value) -> head.append(name).append(": ").append(value)
            .append("\r\n"));
        out.write(head.append("\r\n").toString().getBytes(StandardCharsets.ISO_8859_1));
        out.write(body);
        out.flush();
        return;
      }
      Message answer;
      try (Socket upstream = new Socket()) {
        upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort));
        upstream.getOutputStream().write(request.bytes());
        upstream.getOutputStream().flush();
        answer = Message.read(upstream.getInputStream(), false);
      }
      if (answer == null || decided instanceof LoseAnswer) {
        return; // the server did the work; the client hears nothing
      }
      StringBuilder head = new StringBuilder();
      for (String line : answer.head().split("\r\n")) {
        String lower = line.toLowerCase(Locale.ROOT);
        if (!lower.startsWith("connection:") && !lower.startsWith("transfer-encoding:")
            && !lower.startsWith("content-length:")) {
          head.append(line).append("\r\n");
        }
      }
      head.append("Content-Length: ").append(answer.body().length)
          .append("\r\nConnection: close\r\n\r\n");
      out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
      out.write(answer.body());
      out.flush();
    } catch (IOException ignored) {
      // The client or the server went away: nothing to relay.
    }
  }

  /** One HTTP message: its head (start line and headers, without the blank line) and body. */
  private record Message(String head, Map<String, String> headers, byte[] body) {
    byte[] bytes() {
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      all.writeBytes((head + "\r\n\r\n").getBytes(StandardCharsets.ISO_8859_1));
      all.writeBytes(body);
      return all.toByteArray();
    }

    static Message read(InputStream in, boolean request) throws IOException {
      ByteArrayOutputStream head = new ByteArrayOutputStream();
      int matched = 0;
      while (matched < 4) {
        int next = in.read();
        if (next < 0) {
          return null;
        }
        head.write(next);
        matched = (next == (matched % 2 == 0 ? '\r' : '\n')) ? matched + 1
            : next == '\r' ? 1 : 0;
      }
      String text = head.toString(StandardCharsets.ISO_8859_1);
      text = text.substring(0, text.length() - 4);
      Map<String, String> headers = new TreeMap<>();
      for (String line : text.split("\r\n")) {
        int colon = line.indexOf(':');
        if (colon > 0) {
          headers.put(line.substring(0, colon).strip().toLowerCase(Locale.ROOT),
              line.substring(colon + 1).strip());
        }
      }
      byte[] body;
      if (headers.containsKey("content-length")) {
        body = in.readNBytes(Integer.parseInt(headers.get("content-length")));
      } else if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
        ByteArrayOutputStream chunks = new ByteArrayOutputStream();
        while (true) {
          int size = Integer.parseInt(line(in).split(";")[0].strip(), 16);
          if (size == 0) {
            line(in);
            break;
          }
          chunks.writeBytes(in.readNBytes(size));
          line(in);
        }
        body = chunks.toByteArray();
        // Forwarded with a length instead.
        text = text.replaceAll("(?im)^transfer-encoding:.*(\r\n)?", "")
            + "\r\nContent-Length: " + body.length;
      } else {
        body = new byte[0];
      }
      return new Message(text.strip(), headers, body);
    }

    private static String line(InputStream in) throws IOException {
      StringBuilder line = new StringBuilder();
      for (int next = in.read(); next >= 0 && next != '\n'; next = in.read()) {
        if (next != '\r') {
          line.append((char) next);
        }
      }
      return line.toString();
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
  }
}
