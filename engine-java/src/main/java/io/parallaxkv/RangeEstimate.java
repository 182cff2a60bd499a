package io.parallaxkv;

/**
 * The approximate size of a key range of a region ({@code par_range_estimate}), from
 * {@link Region#estimateRange}: enough for split decisions and metrics, like RocksDB's
 * {@code GetApproximateSizes}.
 *
 * @param entries versions with a key in the range, tombstones included, in L0 and every level
 *                (a key overwritten or deleted since its last merge counts more than once)
 * @param bytes   what they take: L0 memory and the levels' B+-tree nodes, small and inline values
 *                included; medium and large values, stored in their logs, are not counted
 */
public record RangeEstimate(long entries, long bytes) {}
