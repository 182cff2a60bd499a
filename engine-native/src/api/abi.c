#include <stddef.h>
#include <stdint.h>

#include "parallax/parallax.h"

/* The order is part of the interface: io.parallaxkv.internal.Layout.expected()
 * lists the same values; append new ones at the end. */
PAR_API size_t par_abi_layout(int64_t *out, size_t cap) {
  const int64_t v[] = {
      (int64_t)sizeof(par_options),
      (int64_t)offsetof(par_options, l0_size),
      (int64_t)offsetof(par_options, growth_factor),
      (int64_t)offsetof(par_options, durability_interval_ms),
      (int64_t)offsetof(par_options, compaction_threads),
      (int64_t)offsetof(par_options, use_direct_io),
      (int64_t)offsetof(par_options, max_volume_size),
      (int64_t)offsetof(par_options, create_if_missing),
      (int64_t)offsetof(par_options, placement),
      (int64_t)offsetof(par_options, small_threshold),
      (int64_t)offsetof(par_options, large_threshold),
      (int64_t)offsetof(par_options, gc_threshold_pct),
      (int64_t)offsetof(par_options, medium_merge_level),
      (int64_t)sizeof(par_stats),
      (int64_t)offsetof(par_stats, puts),
      (int64_t)offsetof(par_stats, last_lsn),
      (int64_t)offsetof(par_stats, levels),
      (int64_t)offsetof(par_stats, level),
      (int64_t)offsetof(par_stats, small_puts),
      (int64_t)offsetof(par_stats, medium_log_bytes_written),
      (int64_t)offsetof(par_stats, level_small_bytes),
      (int64_t)offsetof(par_stats, medium_log_value_reads),
      (int64_t)sizeof(par_level_stats),
      (int64_t)offsetof(par_level_stats, height),
      (int64_t)sizeof(par_volume_stats),
      (int64_t)PAR_MAX_KEY_SIZE,
      (int64_t)PAR_MAX_VALUE_SIZE,
      (int64_t)PAR_MAX_BATCH_SIZE,
      (int64_t)PAR_MAX_REGION_NAME,
      (int64_t)PAR_MAX_LEVELS,
      (int64_t)offsetof(par_stats, estimated_keys),
      (int64_t)sizeof(par_range_estimate),
      (int64_t)sizeof(par_checkpoint_stats),
      (int64_t)offsetof(par_options, memory_budget_mib),
      (int64_t)offsetof(par_volume_stats, memory_budget),
      (int64_t)offsetof(par_volume_stats, segments_released),
      (int64_t)offsetof(par_options, sort_large_values),
      (int64_t)offsetof(par_stats, large_log_bytes_sorted),
      (int64_t)offsetof(par_options, warm_mib),
      (int64_t)offsetof(par_stats, warm_bytes_read),
  };
  size_t n = sizeof v / sizeof v[0];
  for (size_t i = 0; out && i < n && i < cap; i++) out[i] = v[i];
  return n;
}
