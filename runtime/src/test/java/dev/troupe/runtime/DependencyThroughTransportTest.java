package dev.troupe.runtime;

/**
 * Every dependency test again with every entity message of the node sent through the transport
 * as wire bytes ({@code troupe.transport.route-entity-messages} and {@code encode-local-messages}
 * on): dependencies' followers brought into transactions, forwards and their rounds, PSAC parts,
 * a restart, all carried by the remote path a cluster uses between nodes.
 */
class DependencyThroughTransportTest extends DependencyTest {
  @Override
  String routingSettings() {
    return EntityMessagesThroughTransportTest.ROUTED;
  }
}
