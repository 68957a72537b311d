package dev.troupe.runtime;

/**
 * What happens when a bug is detected (a violated invariant): the embedding application decides,
 * the server halts the process, because continuing could acknowledge writes on top of corrupt state.
 */
@FunctionalInterface
public interface FatalErrorHandler {
  void onFatalError(String where, Throwable error);
}
