package dev.troupe.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Locale;

/**
 * A minimal HTTP/1.1 client on one keep-alive connection, opened on first use and reopened after
 * the server closes it. One connection serves one worker at a time (not thread-safe).
 *
 * <p>Why not {@code java.net.http.HttpClient}: on a 2-core machine the client shares the CPU with
 * the server it measures, and HttpClient's per-request cost (its selector thread, futures,
 * header maps) is several times this client's, so it would become the bottleneck and compress every
 * ratio towards 1. This client writes one request with a single flush and parses the status line,
 * {@code Content-Length} or chunked bodies and {@code Connection: close}, nothing more; it is the
 * same client for every server compared.
 */
final class HttpConnection implements AutoCloseable {
  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
  private static final int READ_TIMEOUT_MILLIS = 120_000;

  /**
   * A response: status code, body bytes, and whether it says {@code Troupe-Forwarded: true} (the
   * cluster member that answered does not host the entity: the request took a hop).
   */
  record Response(int status, byte[] body, boolean forwarded) {
    Response(int status, byte[] body) {
      this(status, body, false);
    }

    String text() {
      return new String(body, StandardCharsets.UTF_8);
    }
  }

  private final String host;
  private final int port;
  /** Sent as {@code Authorization: Bearer ...} with every request; null sends none. */
  private final String bearerToken;
  private Socket socket;
  private InputStream input;
  private OutputStream output;

  HttpConnection(String host, int port) {
    this(host, port, null);
  }

  /** A connection that authenticates every request with {@code bearerToken} (null: none). */
  HttpConnection(String host, int port, String bearerToken) {
    this.host = host;
    this.port = port;
    this.bearerToken = bearerToken;
  }

  Response get(String path) throws IOException {
    return send("GET", path, null);
  }

  Response put(String path, byte[] jsonBody) throws IOException {
    return send("PUT", path, jsonBody);
  }

  /**
   * Sends one request and reads its whole response. Any I/O failure closes the connection (the next
   * request reconnects) and is rethrown: the caller decides what an unanswered request means.
   */
  Response send(String method, String path, byte[] jsonBody) throws IOException {
    return send(method, path, jsonBody, null);
  }

  /** As {@link #send(String, String, byte[])}, with an {@code Idempotency-Key} unless null. */
  Response send(String method, String path, byte[] jsonBody, String idempotencyKey)
      throws IOException {
    if (socket == null) {
      connect();
    }
    try {
      writeRequest(method, path, jsonBody, idempotencyKey);
      return readResponse();
    } catch (IOException | RuntimeException e) {
      close();
      throw e;
    }
  }

  private void connect() throws IOException {
    Socket opened = new Socket();
    try {
      opened.setTcpNoDelay(true);
      opened.setSoTimeout(READ_TIMEOUT_MILLIS);
      opened.connect(new InetSocketAddress(host, port), CONNECT_TIMEOUT_MILLIS);
      input = new BufferedInputStream(opened.getInputStream(), 16 * 1024);
      output = new BufferedOutputStream(opened.getOutputStream(), 16 * 1024);
      socket = opened;
    } catch (IOException e) {
      opened.close();
      throw e;
    }
  }

  private void writeRequest(String method, String path, byte[] jsonBody, String idempotencyKey)
      throws IOException {
    StringBuilder head = new StringBuilder(128)
        .append(method).append(' ').append(path).append(" HTTP/1.1\r\n")
        .append("Host: ").append(host).append(':').append(port).append("\r\n");
    if (bearerToken != null) {
      head.append("Authorization: Bearer ").append(bearerToken).append("\r\n");
    }
    if (idempotencyKey != null) {
      head.append("Idempotency-Key: ").append(idempotencyKey).append("\r\n");
    }
    if (jsonBody != null) {
      head.append("Content-Type: application/json\r\nContent-Length: ")
          .append(jsonBody.length).append("\r\n");
    }
    head.append("\r\n");
    output.write(head.toString().getBytes(StandardCharsets.US_ASCII));
    if (jsonBody != null) {
      output.write(jsonBody);
    }
    output.flush();
  }

  private Response readResponse() throws IOException {
    String statusLine = readLine();
    String[] parts = statusLine.split(" ", 3);
    if (parts.length < 2 || !parts[0].startsWith("HTTP/1.")) {
      throw new IOException("not an HTTP/1.x status line: " + statusLine);
    }
    int status = Integer.parseInt(parts[1]);
    long contentLength = -1;
    boolean chunked = false;
    boolean closeAfter = false;
    boolean forwarded = false;
    for (String header = readLine(); !header.isEmpty(); header = readLine()) {
      int colon = header.indexOf(':');
      if (colon < 0) {
        throw new IOException("malformed header: " + header);
      }
      String name = header.substring(0, colon).trim().toLowerCase(Locale.ROOT);
      String value = header.substring(colon + 1).trim().toLowerCase(Locale.ROOT);
      switch (name) {
        case "content-length" -> contentLength = Long.parseLong(value);
        case "transfer-encoding" -> chunked = value.contains("chunked");
        case "connection" -> closeAfter = value.contains("close");
        case "troupe-forwarded" -> forwarded = value.equals("true");
        default -> {
          // Other headers do not affect framing.
        }
      }
    }
    byte[] body;
    if (chunked) {
      body = readChunkedBody();
    } else if (contentLength >= 0) {
      body = readExactly((int) contentLength);
    } else {
      body = input.readAllBytes();
      closeAfter = true;
    }
    if (closeAfter) {
      close();
    }
    return new Response(status, body, forwarded);
  }

  private byte[] readChunkedBody() throws IOException {
    ByteArrayOutputStream body = new ByteArrayOutputStream();
    while (true) {
      String sizeLine = readLine();
      int extension = sizeLine.indexOf(';');
      int size = Integer.parseInt(
          (extension < 0 ? sizeLine : sizeLine.substring(0, extension)).trim(), 16);
      if (size == 0) {
        while (!readLine().isEmpty()) {
          // Trailer headers carry nothing this client needs.
        }
        return body.toByteArray();
      }
      body.write(readExactly(size));
      readLine();
    }
  }

  private byte[] readExactly(int length) throws IOException {
    byte[] bytes = input.readNBytes(length);
    if (bytes.length != length) {
      throw new EOFException("connection closed after " + bytes.length + " of " + length
          + " body bytes");
    }
    return bytes;
  }

  /** One CRLF-terminated line, without the terminator. */
  private String readLine() throws IOException {
    StringBuilder line = new StringBuilder(64);
    while (true) {
      int next = input.read();
      if (next < 0) {
        throw new EOFException("connection closed by the server");
      }
      if (next == '\n') {
        int length = line.length();
        if (length > 0 && line.charAt(length - 1) == '\r') {
          line.setLength(length - 1);
        }
        return line.toString();
      }
      line.append((char) next);
    }
  }

  @Override
  public void close() {
    if (socket != null) {
      try {
        socket.close();
      } catch (IOException ignored) {
        // Closing a socket that is already broken: nothing left to release.
      }
      socket = null;
      input = null;
      output = null;
    }
  }
}
