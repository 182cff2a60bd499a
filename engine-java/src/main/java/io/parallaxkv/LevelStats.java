package io.parallaxkv;

/**
 * Counters of one device level ({@code par_level_stats}).
 *
 * @param level                  the level number, 1..{@link Parallax#MAX_LEVELS}
 * @param liveBytes              bytes of the level's B+-tree (nodes on disk)
 * @param entries                key-value entries, tombstones included
 * @param segments               segments the level owns
 * @param compactionBytesRead    bytes read from this level by compactions
 * @param compactionBytesWritten bytes written into this level by compactions
 * @param height                 B+-tree height (0 when the level is empty)
 */
public record LevelStats(int level, long liveBytes, long entries, long segments,
    long compactionBytesRead, long compactionBytesWritten, int height) {}
