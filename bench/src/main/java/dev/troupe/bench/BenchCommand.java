package dev.troupe.bench;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code troupe bench}: the benchmarks. Each measures Troupe against a real baseline in the same
 * run on the same machine, prints a table and the ratios with their goals (PASS or MISS), and with
 * {@code --json FILE} writes the report as JSON. docs/BENCHMARKS.md explains each one and records
 * measured figures.
 */
@Command(
    name = "bench",
    mixinStandardHelpOptions = true,
    description = "Benchmarks against real baselines measured in the same run.",
    subcommands = {
      StorageBenchmark.class,
      CacheBenchmark.class,
      CachedStateSizeBenchmark.class,
      RestBenchmark.class,
      RecoveryBenchmark.class,
      YcsbBenchmark.class,
      GrowthBenchmark.class,
      BankBenchmark.class,
      SmallBankBenchmark.class,
      MarketplaceBenchmark.class,
      OverloadBenchmark.class,
      MemoryBenchmark.class,
      VisibilityBenchmark.class,
      CausalCostBenchmark.class,
      ClusterBenchmark.class,
      FailoverBenchmark.class,
      MemorySpreadBenchmark.class,
      SystemOfRecordBenchmark.class,
      CommandLine.HelpCommand.class
    },
    footer = {
      "",
      "Examples:",
      "  troupe bench storage --threads 64 --seconds 10 --value-bytes 100",
      "  troupe bench cache --operations 10000",
      "  troupe bench cached-size --records 50000",
      "  troupe bench rest --threads 64 --seconds 10",
      "  troupe bench recovery --megabytes 1024 --value-bytes 1000 --json recovery.json",
      "  troupe bench ycsb --workload a,b,c,f --records 100000 --threads 64 --target both --report ycsb-report",
      "  troupe bench growth --records 10000,100000,1000000 --workload a,c --chart growth.png",
      "  troupe bench bank --scenario nosync,sync,sync1000 --policy both --threads 128 --json bank.json",
      "  troupe bench smallbank --mix multitransfer,smallbank --actor-skew 1 --key-skew 100 --report smallbank-report",
      "  troupe bench marketplace --actor-skew 2 --key-skew 2 --report marketplace-report",
      "  troupe bench overload --clients 256 --seconds 30",
      "  troupe bench visibility --dcs 2 --rtt-millis 100 --seconds 30 --report visibility-report",
      "  troupe bench causal-cost --workload a,b --rounds 2 --json causal-cost.json",
      "  troupe bench cluster --workload a,c --records 20000 --threads 16 --json cluster.json",
      "  troupe bench failover --kills 3 --json failover.json",
      "  troupe bench system-of-record --records 10000 --threads 32 --duration 20"
    })
public final class BenchCommand implements Runnable {
  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }
}
