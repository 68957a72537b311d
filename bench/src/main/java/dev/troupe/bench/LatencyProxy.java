package dev.troupe.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP proxy on loopback that delays every chunk of every connection, in each direction, by a
 * fixed one-way latency: the link between two data centres of a benchmark, whose round trip is
 * twice the latency. The server tests' {@code TcpProxy} (server test sources) also cuts and resets
 * links; a benchmark only needs the delay, so this is that part of it alone.
 *
 * <p>Each chunk read is written once {@code oneWayMillis} have passed since it was read, in order,
 * so the delay does not throttle throughput (as a long fat pipe would not).
 *
 * <p>Concurrency: virtual threads, a reader and a delayed writer per direction per connection.
 */
final class LatencyProxy implements AutoCloseable {
  private static final byte[] END = new byte[0];
  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;

  private final ServerSocket listener;
  private final long oneWayNanos;
  private volatile int targetPort;
  private volatile boolean closed;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();

  private LatencyProxy(ServerSocket listener, long oneWayMillis, int targetPort) {
    this.listener = listener;
    this.oneWayNanos = TimeUnit.MILLISECONDS.toNanos(oneWayMillis);
    this.targetPort = targetPort;
  }

  /**
   * A proxy on a free loopback port adding {@code oneWayMillis} each way, forwarding to {@code
   * targetPort} (0: nowhere yet; connections are closed until {@link #retarget}).
   */
  static LatencyProxy start(long oneWayMillis, int targetPort) throws IOException {
    if (oneWayMillis < 0) {
      throw new IllegalArgumentException("a latency cannot be negative: " + oneWayMillis);
    }
    ServerSocket listener = new ServerSocket();
    listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
    LatencyProxy proxy = new LatencyProxy(listener, oneWayMillis, targetPort);
    Thread.ofVirtual().name("latency-proxy-" + listener.getLocalPort()).start(proxy::accept);
    return proxy;
  }

  /** Forwards new connections to {@code port} from now on. */
  void retarget(int port) {
    targetPort = port;
  }

  int port() {
    return listener.getLocalPort();
  }

  String url() {
    return "http://127.0.0.1:" + port();
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // Closing anyway.
    }
    for (Socket socket : open) {
      quietly(socket);
    }
    open.clear();
  }

  private void accept() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return;
      }
      Thread.ofVirtual().start(() -> connect(client));
    }
  }

  private void connect(Socket client) {
    Socket server = new Socket();
    try {
      client.setTcpNoDelay(true);
      server.setTcpNoDelay(true);
      server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort),
          CONNECT_TIMEOUT_MILLIS);
    } catch (IOException e) {
      // The target is not there (yet): the client sees its connection closed and retries.
      quietly(client);
      quietly(server);
      return;
    }
    open.add(client);
    open.add(server);
    AtomicInteger directions = new AtomicInteger(2);
    Runnable directionDone = () -> {
      if (directions.decrementAndGet() == 0) {
        open.remove(client);
        open.remove(server);
        quietly(client);
        quietly(server);
      }
    };
    pipe(client, server, directionDone);
    pipe(server, client, directionDone);
  }

  /** Forwards {@code from} to {@code to}: a reader and a delayed writer. */
  private void pipe(Socket from, Socket to, Runnable done) {
    LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    Thread.ofVirtual().start(() -> {
      byte[] buffer = new byte[16 * 1024];
      try {
        // Not closed when done: closing a socket's stream closes the socket, and the other
        // direction may still be writing to it.
        InputStream in = from.getInputStream();
        int read;
        while ((read = in.read(buffer)) >= 0) {
          queue.add(new Chunk(System.nanoTime() + oneWayNanos, Arrays.copyOf(buffer, read)));
        }
      } catch (IOException e) {
        // Closed or reset: end the other direction too.
      }
      queue.add(new Chunk(System.nanoTime() + oneWayNanos, END));
    });
    Thread.ofVirtual().start(() -> {
      try {
        OutputStream out = to.getOutputStream();
        while (true) {
          Chunk chunk = queue.take();
          long wait = chunk.dueNanos() - System.nanoTime();
          if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
          }
          if (chunk.bytes() == END) {
            break;
          }
          out.write(chunk.bytes());
          out.flush();
        }
        to.shutdownOutput();
      } catch (IOException | InterruptedException e) {
        quietly(from);
        quietly(to);
      }
      done.run();
    });
  }

  private static void quietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException ignored) {
      // Closing anyway.
    }
  }

  private record Chunk(long dueNanos, byte[] bytes) {}
}
