package io.parallaxkv;

/**
 * Space counters of a volume ({@code par_volume_stats}), from {@link Parallax#stats()}.
 *
 * @param volumeBytes   size of the volume file
 * @param segmentsTotal segments the file holds
 * @param segmentsUsed  segments in use
 * @param metadataBytes bytes of the redo log since its last checkpoint
 * @param memoryBudget  the memory budget in bytes ({@link Options.Builder#memoryBudgetMiB}), 0
 *                      when none is set
 * @param memoryUsed    the engine's count against it: bytes allocated by the L0s of the open
 *                      regions (a flushed L0 still held by a reader is no longer counted);
 *                      counted also without a budget
 * @param memoryPeak    the most {@code memoryUsed} has been since the volume opened
 * @param segmentsReleased free segments whose blocks went back to the file system: the file
 *                      occupies {@code volumeBytes} less these (2 MiB each) on the device
 */
public record VolumeStats(long volumeBytes, long segmentsTotal, long segmentsUsed,
    long metadataBytes, long memoryBudget, long memoryUsed, long memoryPeak,
    long segmentsReleased) {}
