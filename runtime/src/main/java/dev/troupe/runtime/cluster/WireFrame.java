package dev.troupe.runtime.cluster;

/**
 * One message between the nodes of a cluster: the bytes of a {@code txn/wire} {@link
 * dev.troupe.txn.wire.Envelope} encoded with {@link dev.troupe.txn.wire.WireCodec} (type id,
 * version, CRC32C). Artery carries it with {@link WireFrameSerializer}, so what crosses a node is
 * the cores' own stable wire format and never Java serialization. The receiving node decodes it
 * and hands the envelope to its inbox ({@link ClusterTransport#deliverArrived}).
 *
 * <p>Sent to a partition's host through sharding (for a {@code ToEntity} envelope) or to a node's
 * inbox actor (for a {@code ToNode} envelope). Never mutated after it is made.
 */
public record WireFrame(byte[] bytes) implements PartitionHost.Command {}
