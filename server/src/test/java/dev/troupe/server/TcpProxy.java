package dev.troupe.server;

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
import java.util.concurrent.atomic.AtomicLong;

/**
 * A TCP proxy on loopback for tests between server processes: forwards the bytes of every
 * connection to a target port, and on command adds latency, cuts the link (a partition: open
 * connections are closed and new ones are accepted and closed at once, as a peer that cannot be
 * reached looks to an HTTP client) or resets every open connection (RST, as a peer crash or a
 * middlebox timeout looks).
 *
 * <p>Latency is added per chunk and direction, preserving order: each chunk read is written once
 * {@code latencyMillis} have passed since it was read, so throughput is not throttled.
 *
 * <p>Concurrency: virtual threads, two per direction per connection; the commands are safe from any
 * thread.
 */
public final class TcpProxy implements AutoCloseable {
  private static final byte[] END = new byte[0];

  private final ServerSocket listener;
  private volatile int targetPort;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private volatile boolean partitioned;
  private volatile long latencyMillis;
  private volatile boolean closed;
  private final AtomicLong connections = new AtomicLong();

  private TcpProxy(ServerSocket listener, int targetPort) {
    this.listener = listener;
    this.targetPort = targetPort;
  }

  /**
   * A proxy on a free loopback port forwarding to {@code targetPort} on loopback (0: nowhere yet;
   * connections are closed until {@link #retarget}).
   */
  public static TcpProxy start(int targetPort) throws IOException {
    ServerSocket listener = new ServerSocket();
    listener.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 128);
    TcpProxy proxy = new TcpProxy(listener, targetPort);
    Thread.ofVirtual().name("tcp-proxy-accept-" + listener.getLocalPort()).start(proxy::accept);
    return proxy;
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

  /** Connections accepted so far (refused ones during a partition included). */
  public long connections() {
    return connections.get();
  }

  /** Every chunk in either direction arrives this much later. */
  public void latency(long millis) {
    latencyMillis = millis;
  }

  /** Cuts the link: open connections closed, new ones closed as soon as accepted. */
  public void partition() {
    partitioned = true;
    closeAll(false);
  }

  /** Heals a partition: new connections are forwarded again. */
  public void heal() {
    partitioned = false;
  }

  /** Resets every open connection (TCP RST to both sides); new ones are forwarded. */
  public void reset() {
    closeAll(true);
  }

  @Override
  public void close() throws IOException {
    closed = true;
    listener.close();
    closeAll(true);
  }

  private void accept() {
    while (!closed) {
      Socket client;
      try {
        client = listener.accept();
      } catch (IOException e) {
        return;
      }
      connections.incrementAndGet();
      if (partitioned) {
        quietly(client, true);
        continue;
      }
      Thread.ofVirtual().start(() -> connect(client));
    }
  }

  private void connect(Socket client) {
    Socket server = new Socket();
    try {
      server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort), 5_000);
    } catch (IOException e) {
      // The target is down: the client sees its connection closed, as with a dead peer.
      quietly(client, true);
      quietly(server, true);
      return;
    }
    open.add(client);
    open.add(server);
    if (partitioned) {
      closeAll(false);
      return;
    }
    java.util.concurrent.atomic.AtomicInteger directions =
        new java.util.concurrent.atomic.AtomicInteger(2);
    Runnable directionDone = () -> {
      if (directions.decrementAndGet() == 0) {
        open.remove(client);
        open.remove(server);
        quietly(client, false);
        quietly(server, false);
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
          if (partitioned) {
            break;
          }
          queue.add(new Chunk(System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(latencyMillis),
              Arrays.copyOf(buffer, read)));
        }
      } catch (IOException e) {
        // Closed or reset: end the other direction too.
      }
      queue.add(new Chunk(System.nanoTime(), END));
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

  private void closeAll(boolean reset) {
    for (Socket socket : open) {
      quietly(socket, reset);
    }
    open.clear();
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
}
