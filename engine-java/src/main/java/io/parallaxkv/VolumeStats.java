package io.parallaxkv;

/**
 * Space counters of a volume ({@code par_volume_stats}), from {@link Parallax#stats()}.
 *
 * @param volumeBytes   size of the volume file
 * @param segmentsTotal segments the file holds
 * @param segmentsUsed  segments in use
 * @param metadataBytes bytes of the redo log since its last checkpoint
 */
public record VolumeStats(long volumeBytes, long segmentsTotal, long segmentsUsed,
    long metadataBytes) {}
