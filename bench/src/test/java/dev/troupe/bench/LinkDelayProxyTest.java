package dev.troupe.bench;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.DataInputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The delaying forwarder of {@code bench bank --link-delay-millis}: every byte, in order, both ways. */
class LinkDelayProxyTest {
  @Test
  void forwardsEveryByteInOrderBothWays() throws Exception {
    try (ServerSocket echo = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
      Thread echoing = Thread.ofPlatform().start(() -> {
        try (Socket accepted = echo.accept(); InputStream in = accepted.getInputStream();
            OutputStream out = accepted.getOutputStream()) {
          in.transferTo(out);
        } catch (Exception ignored) {
          // The test fails on the client side if the echo breaks.
        }
      });
      int listenPort;
      try (ServerSocket free = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
        listenPort = free.getLocalPort();
      }
      try (LinkDelayProxy proxy = LinkDelayProxy.start(listenPort, echo.getLocalPort(), 1);
          Socket client = new Socket("127.0.0.1", proxy.port())) {
        assertEquals(listenPort, proxy.port());
        byte[] sent = new byte[300_000]; // several chunks
        new Random(7).nextBytes(sent);
        Thread writer = Thread.ofPlatform().start(() -> {
          try {
            OutputStream out = client.getOutputStream();
            for (int offset = 0; offset < sent.length; offset += 10_000) {
              out.write(sent, offset, Math.min(10_000, sent.length - offset));
            }
            client.shutdownOutput();
          } catch (Exception e) {
            throw new RuntimeException(e);
          }
        });
        byte[] received = new byte[sent.length];
        new DataInputStream(client.getInputStream()).readFully(received);
        writer.join();
        assertArrayEquals(sent, received);
        assertEquals(-1, client.getInputStream().read(), "the end of the stream is forwarded");
      }
      echoing.join();
    }
  }
}
