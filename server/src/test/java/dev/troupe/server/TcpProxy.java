package dev.troupe.server;

import dev.troupe.server.proxy.LoopbackProxy;
import java.io.IOException;

/**
 * A TCP proxy on loopback for tests between server processes: the benchmarks' {@link
 * LoopbackProxy} (forwarding to a target port, retargetable, with a latency settable at any time)
 * plus faults on command: cut the link (a partition: open connections are closed and new ones are
 * accepted and closed at once, as a peer that cannot be reached looks to an HTTP client) or reset
 * every open connection (RST, as a peer crash or a middlebox timeout looks).
 *
 * <p>Concurrency: the commands are safe from any thread.
 */
public class TcpProxy extends LoopbackProxy {
  private volatile boolean partitioned;

  protected TcpProxy(int targetPort) throws IOException {
    super(targetPort);
  }

  /**
   * A proxy on a free loopback port forwarding to {@code targetPort} on loopback (0: nowhere yet;
   * connections are closed until {@link #retarget}), without latency.
   */
  public static TcpProxy start(int targetPort) throws IOException {
    TcpProxy proxy = new TcpProxy(targetPort);
    proxy.accept();
    return proxy;
  }

  /** Cuts the link: open connections closed, new ones closed as soon as accepted. */
  public void partition() {
    partitioned = true;
    closeConnections(false);
  }

  /** Heals a partition: new connections are forwarded again. */
  public void heal() {
    partitioned = false;
  }

  /** Resets every open connection (TCP RST to both sides); new ones are forwarded. */
  public void reset() {
    closeConnections(true);
  }

  @Override
  protected boolean forwarding() {
    return !partitioned;
  }
}
