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
 * @param smallBytesWritten      leaf bytes compactions wrote into this level for small pairs
 *                               (tombstones included)
 * @param mediumBytesWritten     leaf bytes written for medium pairs: in place at the merge
 *                               level, a 12-byte key prefix and a log pointer above it
 * @param largeBytesWritten      leaf bytes written for large pairs (key and log pointer)
 */
public record LevelStats(int level, long liveBytes, long entries, long segments,
    long compactionBytesRead, long compactionBytesWritten, int height, long smallBytesWritten,
    long mediumBytesWritten, long largeBytesWritten) {}
