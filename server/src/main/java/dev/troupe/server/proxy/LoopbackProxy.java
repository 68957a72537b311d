package dev.troupe.server.proxy;

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
 * A TCP proxy on loopback that forwards every connection to a target port, adding a one-way
 * latency to every chunk in each direction: the link between two data centres on one machine, for
 * the benchmarks ({@code troupe bench visibility}, {@code causal-cost}) and, extended with faults
 * (a cut link, reset connections), for the server's multi-DC tests ({@code TcpProxy} in the
 * server's test sources). One class for both, so that what a benchmark measures through and what a
 * test breaks are the same forwarding.
 *
 * <p>Each chunk read is written once {@link #latency} has passed since it was read, in order, so
 * the delay does not throttle throughput (as a long fat pipe would not); the end of a direction is
 * delayed alike. Nagle's algorithm is off on both sides, or small answers would wait for it rather
 * than for the latency.
 *
 * <p>Concurrency: virtual threads, a reader and a delayed writer per direction per connection; the
 * commands are safe from any thread.
 */
public class LoopbackProxy implements AutoCloseable {
  private static final byte[] END = new byte[0];
  private static final int CONNECT_TIMEOUT_MILLIS = 5_000;
  private static final int BUFFER_BYTES = 16 * 1024;

  private final ServerSocket listener;
  private volatile int targetPort;
  private volatile long latencyNanos;
  private volatile boolean closed;
  private final Set<Connection> open = ConcurrentHashMap.newKeySet();

  /** Binds a free loopback port; {@link #accept} starts forwarding. */
  protected LoopbackProxy(int targetPort) throws IOException {
    ServerSocket bound = new ServerSocket();
    bound.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
    this.listener = bound;
    this.targetPort = targetPort;
  }

  /**
   * A proxy on a free loopback port adding {@code oneWayMillis} each way, forwarding to {@code
   * targetPort} (0: nowhere yet; connections are closed until {@link #retarget}).
   */
  public static LoopbackProxy start(long oneWayMillis, int targetPort) throws IOException {
    LoopbackProxy proxy = new LoopbackProxy(targetPort);
    proxy.latency(oneWayMillis);
    proxy.accept();
    return proxy;
  }

  /** Starts accepting connections (once, after construction). */
  protected final void accept() {
    Thread.ofVirtual().name("loopback-proxy-" + port()).start(this::acceptLoop);
  }

  /** Forwards new connections to {@code port} from now on (a restarted server's new port). */
  public void retarget(int port) {
    targetPort = port;
  }

  public int port() {
    return listener.getLocalPort();
  }

  public String url() {
    return "http://127.0.0.1:" + port();
  }

  /** Every chunk in either direction read from now on arrives {@code millis} later. */
  public void latency(long millis) {
    if (millis < 0) {
      throw new IllegalArgumentException("a latency cannot be negative: " + millis);
    }
    latencyNanos = TimeUnit.MILLISECONDS.toNanos(millis);
  }

  /**
   * Whether connections are forwarded now: when not, a new one is closed as soon as accepted and
   * an open one stops at its next chunk (a subclass's cut link). Always, here.
   */
  protected boolean forwarding() {
    return true;
  }

  /**
   * Whether the new connection of {@code client} is forwarded: {@link #forwarding()} here; a
   * subclass may refuse some clients (a test's cut between two peers on one machine).
   */
  protected boolean forwarding(Socket client) {
    return forwarding();
  }

  /**
   * Closes the open connections whose client is at {@code address} (the peer on the other side of
   * a cut), not the others.
   */
  protected final void closeConnectionsFrom(InetAddress address) {
    for (Connection connection : open) {
      if (address.equals(connection.client().getInetAddress())) {
        connection.close(false);
        open.remove(connection);
      }
    }
  }

  /** Closes every open connection, with a TCP RST to both sides if {@code reset}. */
  protected final void closeConnections(boolean reset) {
    for (Connection connection : open) {
      connection.close(reset);
      open.remove(connection);
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // Closing anyway.
    }
    closeConnections(true);
  }

  private void acceptLoop() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return;
      }
      if (!forwarding(client)) {
        quietly(client, true);
        continue;
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
      // The target is not there (down, or not yet): the client sees its connection closed, as
      // with a dead peer, and retries.
      quietly(client, true);
      quietly(server, true);
      return;
    }
    Connection connection = new Connection(client, server);
    open.add(connection);
    if (!forwarding()) {
      closeConnections(false);
      return;
    }
    AtomicInteger directions = new AtomicInteger(2);
    Runnable directionDone = () -> {
      if (directions.decrementAndGet() == 0) {
        open.remove(connection);
        connection.close(false);
      }
    };
    pipe(client, server, directionDone);
    pipe(server, client, directionDone);
  }

  /** Forwards {@code from} to {@code to}: a reader and a delayed writer. */
  private void pipe(Socket from, Socket to, Runnable done) {
    LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    Thread.ofVirtual().start(() -> {
      byte[] buffer = new byte[BUFFER_BYTES];
      try {
        // Not closed when done: closing a socket's stream closes the socket, and the other
        // direction may still be writing to it.
        InputStream in = from.getInputStream();
        int read;
        while ((read = in.read(buffer)) >= 0) {
          if (!forwarding()) {
            break;
          }
          queue.add(new Chunk(System.nanoTime() + latencyNanos, Arrays.copyOf(buffer, read)));
        }
      } catch (IOException e) {
        // Closed or reset: end the other direction too.
      }
      queue.add(new Chunk(System.nanoTime() + latencyNanos, END));
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
        // The other side is gone: so is this direction.
        quietly(from, false);
        quietly(to, false);
      }
      done.run();
    });
  }

  private static void quietly(Socket socket, boolean reset) {
    try {
      if (reset && !socket.isClosed()) {
        socket.setSoLinger(true, 0);
      }
      socket.close();
    } catch (IOException ignored) {
      // Closing anyway.
    }
  }

  private record Chunk(long dueNanos, byte[] bytes) {}

  /** A forwarded connection: the accepted client socket and the proxy's socket to the target. */
  private record Connection(Socket client, Socket server) {
    /**
     * The client's side first: closing the target's side first would end the pipe towards the
     * client, whose writer half-closes the client socket (a FIN) before this close could reset
     * it, and a client told to expect a reset would read an orderly end instead.
     */
    void close(boolean reset) {
      quietly(client, reset);
      quietly(server, reset);
    }
  }
}
