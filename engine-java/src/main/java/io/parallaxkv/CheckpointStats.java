package io.parallaxkv;

/**
 * What a {@linkplain Parallax#checkpoint(java.nio.file.Path, String...) checkpoint} did
 * ({@code par_checkpoint_stats}).
 *
 * @param segments       2 MiB segments the checkpoint holds
 * @param segmentsCopied of those, the ones written because the target's differed (all of them
 *                       into a new target; the changed ones into an earlier checkpoint)
 * @param bytesCopied    bytes written into the target: those segments, the catalog and the
 *                       superblocks
 * @param bytesRead      bytes read to compare: the source's segments and the target's
 */
public record CheckpointStats(long segments, long segmentsCopied, long bytesCopied,
    long bytesRead) {}
