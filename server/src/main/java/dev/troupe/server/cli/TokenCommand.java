package dev.troupe.server.cli;

import dev.troupe.server.http.Authorization;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/** {@code troupe token create}: mints a bearer token for {@code troupe.http.auth.tokens}. */
@Command(name = "token", mixinStandardHelpOptions = true,
    description = "Manage the REST API's bearer tokens.",
    subcommands = TokenCommand.Create.class)
final class TokenCommand implements Runnable {
  /** Random bytes in a token: 256 bits, beyond any guessing (see {@link Authorization}). */
  static final int TOKEN_BYTES = 32;
  /** Marks Troupe tokens, so that secret scanners and people recognize them. */
  static final String TOKEN_PREFIX = "troupe_";

  @picocli.CommandLine.Spec picocli.CommandLine.Model.CommandSpec spec;

  @Override
  public void run() {
    spec.commandLine().usage(System.out);
  }

  @Command(name = "create", mixinStandardHelpOptions = true,
      description = {"Mint a token: prints the secret once (give it to the client) and the",
          "line to add to troupe.http.auth.tokens, which holds only its SHA-256."})
  static final class Create implements Callable<Integer> {
    @Option(names = "--name", required = true, description = "Who or what uses the token.")
    String name;

    @Option(names = "--scopes", required = true, split = ",", paramLabel = "SCOPE",
        description = "Comma-separated: read, write, admin.")
    List<String> scopes;

    @Override
    public Integer call() {
      if (name.isBlank() || name.contains("\"") || name.contains("\\")) {
        System.err.println("troupe token create: --name must be non-blank, without quotes");
        return 2;
      }
      Set<String> labels = new LinkedHashSet<>();
      try {
        for (String scope : scopes) {
          labels.add(Authorization.Scope.parse(scope.trim()).label());
        }
      } catch (IllegalArgumentException e) {
        System.err.println("troupe token create: " + e.getMessage());
        return 2;
      }
      byte[] secret = new byte[TOKEN_BYTES];
      new SecureRandom().nextBytes(secret);
      String token = TOKEN_PREFIX + Base64.getUrlEncoder().withoutPadding().encodeToString(secret);
      System.out.println("token: " + token);
      System.out.println("(shown once; the server keeps only its hash)");
      System.out.println("add to troupe.http.auth.tokens:");
      System.out.println("{ name = \"" + name + "\", sha256 = \"" + Authorization.sha256Hex(token)
          + "\", scopes = [" + labels.stream().collect(Collectors.joining(", ")) + "] }");
      return 0;
    }
  }
}
