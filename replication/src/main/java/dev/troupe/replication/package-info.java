/**
 * The causal replication cores between data centres (pure: no Pekko, storage, threads or clock).
 * See docs/ARCHITECTURE.md, "Several data centres".
 */
package dev.troupe.replication;
