package dev.troupe.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP forwarder in this JVM that delays every byte by a fixed time in each direction: what a
 * benchmark puts in front of a cluster member's Artery port to give the links between the members
 * of a data centre a latency on one machine (test and benchmark use only). The member binds Artery
 * at a private port ({@code pekko.remote.artery.bind.port}) and advertises the proxy's port as its
 * canonical address, so every other member's connection to it runs through the proxy.
 *
 * <p>Each direction of each connection has a reader that stamps every chunk it reads with its due
 * time and a writer that sends the chunks in order once due: a constant delay keeps the order and
 * adds no throughput limit beyond the copying (the bandwidth of a loopback link is not modelled).
 */
final class LinkDelayProxy implements AutoCloseable {
  private static final String HOST = "127.0.0.1";
  private static final int CHUNK_BYTES = 64 * 1024;

  private final ServerSocket listener;
  private final int targetPort;
  private final long delayNanos;
  private final List<Socket> sockets = new ArrayList<>();
  private volatile boolean closed;

  private record Chunk(long dueNanos, byte[] bytes) {}

  /** A marker that ends a direction's writer. */
  private static final Chunk END = new Chunk(0, new byte[0]);

  private LinkDelayProxy(ServerSocket listener, int targetPort, long delayNanos) {
    this.listener = listener;
    this.targetPort = targetPort;
    this.delayNanos = delayNanos;
  }

  /** Listens on {@code listenPort} of 127.0.0.1 and forwards to {@code targetPort} there. */
  static LinkDelayProxy start(int listenPort, int targetPort, long delayMillis)
      throws IOException {
    ServerSocket listener = new ServerSocket();
    listener.setReuseAddress(true);
    listener.bind(new InetSocketAddress(InetAddress.getByName(HOST), listenPort));
    LinkDelayProxy proxy =
        new LinkDelayProxy(listener, targetPort, TimeUnit.MILLISECONDS.toNanos(delayMillis));
    Thread.ofPlatform().daemon().name("link-delay-accept-" + listenPort).start(proxy::accept);
    return proxy;
  }

  int port() {
    return listener.getLocalPort();
  }

  private void accept() {
    while (!closed) {
      try {
        Socket inbound = listener.accept();
        Socket outbound = new Socket();
        try {
          outbound.connect(new InetSocketAddress(HOST, targetPort), 5_000);
        } catch (IOException targetDown) {
          inbound.close(); // the member is down: refuse as it would
          outbound.close();
          continue;
        }
        inbound.setTcpNoDelay(true);
        outbound.setTcpNoDelay(true);
        synchronized (sockets) {
          sockets.add(inbound);
          sockets.add(outbound);
        }
        java.util.concurrent.atomic.AtomicInteger openDirections =
            new java.util.concurrent.atomic.AtomicInteger(2);
        pump(inbound, outbound, openDirections);
        pump(outbound, inbound, openDirections);
      } catch (IOException e) {
        if (!closed) {
          System.err.println("link delay proxy: " + e);
        }
      }
    }
  }

  /**
   * Copies {@code from} to {@code to}, each chunk after the delay; at the end of {@code from}'s
   * stream shuts {@code to}'s output (a half-close is forwarded), and the last of the two
   * directions to end closes both sockets.
   */
  private void pump(Socket from, Socket to,
      java.util.concurrent.atomic.AtomicInteger openDirections) {
    BlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    Thread.ofPlatform().daemon().name("link-delay-read").start(() -> {
      byte[] buffer = new byte[CHUNK_BYTES];
      try {
        InputStream in = from.getInputStream();
        int read;
        while ((read = in.read(buffer)) >= 0) {
          queue.add(new Chunk(System.nanoTime() + delayNanos, Arrays.copyOf(buffer, read)));
        }
      } catch (IOException closedOrReset) {
        // The connection ended; the writer closes the other side.
      } finally {
        queue.add(END);
      }
    });
    Thread.ofPlatform().daemon().name("link-delay-write").start(() -> {
      boolean ended = false;
      try {
        OutputStream out = to.getOutputStream();
        while (true) {
          Chunk chunk = queue.take();
          if (chunk == END) {
            ended = true;
            to.shutdownOutput();
            break;
          }
          long wait;
          while ((wait = chunk.dueNanos() - System.nanoTime()) > 0) {
            LockSupport.parkNanos(wait);
          }
          out.write(chunk.bytes());
          out.flush();
        }
      } catch (IOException | InterruptedException closedOrReset) {
        // Ends this direction, and the connection: a reset is not a half-close.
      } finally {
        if (!ended || openDirections.decrementAndGet() == 0) {
          closeQuietly(to);
          closeQuietly(from);
        }
      }
    });
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException ignored) {
      // Closing is all that is left to do.
    }
  }

  @Override
  public void close() {
    closed = true;
    try {
      listener.close();
    } catch (IOException ignored) {
      // Closing.
    }
    synchronized (sockets) {
      sockets.forEach(LinkDelayProxy::closeQuietly);
    }
  }
}
