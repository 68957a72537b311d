package dev.troupe.server.cli;

import dev.troupe.storage.postgres.PostgresInstance;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code troupe cluster --nodes N}: a throwaway cluster on this machine for trying it out. Starts
 * N {@code serve} processes on loopback, each with its own node id (1..N), HTTP port, cluster
 * port and data directory, all joining through the first; prints their URLs; stops them one by
 * one (SIGTERM: each leaves the cluster, handing its partitions off) on Ctrl-C.
 *
 * <p>The nodes share one store: a throwaway PostgreSQL server (initdb in a temporary directory,
 * on 127.0.0.1), started first and stopped and deleted after the last node.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
    description = {"Start a throwaway cluster of nodes on this machine (loopback) and stop it on"
        + " Ctrl-C.", "Each node: its own node id, HTTP port, cluster port and data directory."})
final class ClusterCommand implements Callable<Integer> {
  private static final Pattern LISTENING = Pattern.compile("listening on (https?://\\S+:\\d+)");

  @Option(names = "--nodes", description = "How many nodes (1..9; default: ${DEFAULT-VALUE}).",
      defaultValue = "3")
  int nodes;

  @Option(names = "--port", description = "The first node's HTTP port; the others take the next"
      + " ones (default: ${DEFAULT-VALUE}).", defaultValue = "8081")
  int firstPort;

  @Option(names = "--cluster-port", description = "The first node's cluster port; the others"
      + " take the next ones (default: ${DEFAULT-VALUE}).", defaultValue = "7355")
  int firstClusterPort;

  @Option(names = "--data", description = "Where the nodes' data directories go (default: a new"
      + " temporary directory).")
  Path data;

  @Option(names = "--heap", description = "Each node's maximum heap, as for java -Xmx (default:"
      + " ${DEFAULT-VALUE}).", defaultValue = "384m")
  String heap;

  @Override
  public Integer call() throws Exception {
    if (nodes < 1 || nodes > 9) {
      System.err.println("troupe cluster: --nodes must be in 1..9, was " + nodes);
      return ServeCommand.EXIT_CONFIGURATION;
    }
    Path directory = data != null ? data : Files.createTempDirectory("troupe-cluster-");
    List<String> seeds = new ArrayList<>();
    for (int node = 1; node <= nodes; node++) {
      seeds.add("127.0.0.1:" + (firstClusterPort + node - 1));
    }
    System.out.println("starting a throwaway PostgreSQL for the nodes' shared store...");
    PostgresInstance database;
    try {
      database = PostgresInstance.startForTroupe(128);
    } catch (PostgresInstance.PostgresUnavailableException e) {
      System.err.println("troupe cluster: " + e.getMessage());
      return 1;
    }
    System.out.println("PostgreSQL: " + database.jdbcUrl());
    List<Process> processes = new ArrayList<>();
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      stopAll(processes);
      database.close();
    }, "troupe-cluster-stop"));
    List<String> urls = new ArrayList<>();
    for (int node = 1; node <= nodes; node++) {
      Path nodeData = directory.resolve("node-" + node);
      Files.createDirectories(nodeData);
      List<String> command = new ArrayList<>(List.of(
          Path.of(System.getProperty("java.home"), "bin", "java").toString(),
          "-XX:+IgnoreUnrecognizedVMOptions", "--sun-misc-unsafe-memory-access=allow",
          "--enable-native-access=ALL-UNNAMED", "-Xmx" + heap, "-XX:+UseSerialGC",
          "-cp", System.getProperty("java.class.path"), TroupeCli.class.getName(),
          "serve", "--data", nodeData.toString(), "--port",
          Integer.toString(firstPort + node - 1), "--node-id", Integer.toString(node),
          "--cluster-port", Integer.toString(firstClusterPort + node - 1),
          "--seed-nodes", String.join(",", seeds),
          "--storage", "postgres", "--jdbc-url", database.jdbcUrl()));
      Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
      synchronized (processes) {
        processes.add(process);
      }
      String url = awaitListening(node, process, nodeData.resolve("serve.log"));
      if (url == null) {
        System.err.println("troupe cluster: node " + node + " did not start; see "
            + nodeData.resolve("serve.log"));
        return 1;
      }
      urls.add(url);
      System.out.printf("node %d: %s (cluster port %d, data %s)%n", node, url,
          firstClusterPort + node - 1, nodeData);
    }
    System.out.println("Any node answers for every entity: the nodes share the store.");
    System.out.println("Cluster view: curl " + urls.get(0) + "/v1/cluster");
    System.out.println("Ctrl-C stops every node.");
    System.out.flush();
    for (Process process : processes) {
      process.waitFor();
    }
    return 0;
  }

  /**
   * Copies the node's output to its log file and answers its URL once it listens (null if it
   * exits first, or does not listen within two minutes).
   */
  private static String awaitListening(int node, Process process, Path log) throws Exception {
    CompletableFuture<String> listening = new CompletableFuture<>();
    Thread copier = new Thread(() -> {
      try (BufferedReader lines = new BufferedReader(
              new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
          PrintWriter out = new PrintWriter(Files.newBufferedWriter(log, StandardCharsets.UTF_8),
              true)) {
        String line;
        while ((line = lines.readLine()) != null) {
          out.println(line);
          Matcher matcher = LISTENING.matcher(line);
          if (matcher.find()) {
            listening.complete(matcher.group(1));
          } else if (line.startsWith("troupe:") && !line.startsWith("troupe: warning")) {
            System.err.println("node " + node + ": " + line);
          }
        }
      } catch (IOException e) {
        // The node's output ended: it exited.
      }
      listening.complete(null);
    }, "troupe-cluster-node-" + node);
    copier.setDaemon(true);
    copier.start();
    try {
      return listening.get(2, TimeUnit.MINUTES);
    } catch (java.util.concurrent.TimeoutException e) {
      return null;
    }
  }

  private static void stopAll(List<Process> processes) {
    List<Process> running;
    synchronized (processes) {
      running = List.copyOf(processes);
    }
    // One at a time, the last started first: each leaves a cluster whose other members are up,
    // so its partitions are handed off to them. (Ctrl-C in a terminal signals the nodes too,
    // being in this command's process group: they then leave together, which took 20 s for three
    // on loopback; SIGTERM to this command alone stops them in order, 32 s for three.)
    for (Process process : running.reversed()) {
      process.destroy();
      try {
        if (!process.waitFor(30, TimeUnit.SECONDS)) {
          process.destroyForcibly();
        }
      } catch (InterruptedException e) {
        process.destroyForcibly();
      }
    }
  }
}
