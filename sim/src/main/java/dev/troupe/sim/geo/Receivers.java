package dev.troupe.sim.geo;

/** Which receiver each simulated data centre runs. */
final class Receivers {
  private Receivers() {}

  static Receiver create(SimulatedDataCentre dataCentre, GeoOptions options,
      int[] dataCentreIds) {
    return new StandInReceiver(dataCentre.id, dataCentreIds, dataCentre.durableReceived(),
        dataCentre.recordedApplied(), 4 * options.pullIntervalMillis());
  }
}
