package dev.troupe.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import org.junit.jupiter.api.Test;

/** The test proxy forwards, delays, partitions and resets as the replication tests need. */
class TcpProxyTest {
  /** An echo server: every byte back, until the client half-closes. */
  private static ServerSocket echo() throws IOException {
    ServerSocket server = new ServerSocket();
    server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    Thread.ofVirtual().start(() -> {
      while (true) {
        Socket socket;
        try {
          socket = server.accept();
        } catch (IOException e) {
          return;
        }
        Thread.ofVirtual().start(() -> {
          try (socket) {
            socket.getInputStream().transferTo(socket.getOutputStream());
          } catch (IOException ignored) {
            // Reset by the test.
          }
        });
      }
    });
    return server;
  }

  private static byte[] roundTrip(TcpProxy proxy, byte[] bytes) throws IOException {
    try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
      socket.setSoTimeout(5_000);
      socket.getOutputStream().write(bytes);
      socket.shutdownOutput();
      return socket.getInputStream().readAllBytes();
    }
  }

  @Test
  void forwardsDelaysPartitionsAndResets() throws Exception {
    try (ServerSocket server = echo(); TcpProxy proxy = TcpProxy.start(server.getLocalPort())) {
      byte[] big = new byte[300_000];
      new java.util.Random(1).nextBytes(big);
      assertArrayEquals(big, roundTrip(proxy, big));

      proxy.latency(200);
      long start = System.nanoTime();
      assertArrayEquals("hello".getBytes(), roundTrip(proxy, "hello".getBytes()));
      assertTrue(System.nanoTime() - start >= 400_000_000L, "both directions are delayed");
      proxy.latency(0);

      Socket held = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
      held.setSoTimeout(5_000);
      held.getOutputStream().write(1);
      assertEquals(1, held.getInputStream().read());
      proxy.partition();
      InputStream cut = held.getInputStream();
      assertThrowsOrEnds(cut);
      try {
        assertEquals(0, roundTrip(proxy, "lost".getBytes()).length, "refused while partitioned");
      } catch (IOException refused) {
        // Reset at once: also refused.
      }
      proxy.heal();
      assertArrayEquals("back".getBytes(), roundTrip(proxy, "back".getBytes()));

      Socket reset = new Socket(InetAddress.getLoopbackAddress(), proxy.port());
      reset.setSoTimeout(5_000);
      reset.getOutputStream().write(2);
      assertEquals(2, reset.getInputStream().read());
      proxy.reset();
      assertThrows(IOException.class, () -> reset.getInputStream().read());
    }
  }

  private static void assertThrowsOrEnds(InputStream in) {
    try {
      assertEquals(-1, in.read());
    } catch (IOException reset) {
      // Also a cut link.
    }
  }
}
