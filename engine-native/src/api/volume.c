/* Volumes: open/create, region catalog operations, close. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/internal.h"
#include "util/status.h"

PAR_API void par_options_init(par_options *o) {
  if (!o) return;
  memset(o, 0, sizeof *o);
  o->l0_size = 64ull << 20;
  o->growth_factor = 8;
  o->durability_interval_ms = 100;
  o->compaction_threads = 1;
  o->use_direct_io = 1;
  o->max_volume_size = 0;
  o->create_if_missing = 1;
  o->placement = PAR_PLACEMENT_HYBRID;
  o->small_threshold = 120;
  o->large_threshold = 1024;
  o->gc_threshold_pct = 10;
  o->warm_mib = PAR_WARM_AUTO;
}

static int check_options(const par_options *o) {
  if (o->l0_size < (64u << 10))
    return par_error(PAR_EINVAL, "l0_size of %llu bytes is below the minimum of 64 KiB", (unsigned long long)o->l0_size);
  if (o->growth_factor < 2 || o->growth_factor > 64)
    return par_error(PAR_EINVAL, "growth_factor %u is outside 2..64", o->growth_factor);
  if (o->compaction_threads > 64)
    return par_error(PAR_EINVAL, "compaction_threads %u is over 64", o->compaction_threads);
  if (o->placement > PAR_PLACEMENT_IN_LOG) return par_error(PAR_EINVAL, "unknown placement %u", o->placement);
  if (o->large_threshold > PAR_MAX_INLINE_VALUE)
    return par_error(PAR_EINVAL, "large_threshold %u is above %u, the largest pair kept in place", o->large_threshold,
                     PAR_MAX_INLINE_VALUE);
  if (o->small_threshold > o->large_threshold)
    return par_error(PAR_EINVAL, "small_threshold %u is above large_threshold %u", o->small_threshold,
                     o->large_threshold);
  if (o->sort_large_values > 1)
    return par_error(PAR_EINVAL, "sort_large_values %u is not 0 or 1", o->sort_large_values);
  if (o->medium_merge_level > 1)
    return par_error(PAR_EINVAL, "medium_merge_level %u is not 0 (last) or 1 (last but one)", o->medium_merge_level);
  if (o->gc_threshold_pct < 1 || o->gc_threshold_pct > 100)
    return par_error(PAR_EINVAL, "gc_threshold_pct %u is outside 1..100", o->gc_threshold_pct);
  if (o->max_volume_size && o->max_volume_size < 8ull * PAR_SEGMENT_SIZE)
    return par_error(PAR_EINVAL, "max_volume_size must be 0 or at least 16 MiB");
  return PAR_OK;
}

static int mark_seg(void *arg, uint32_t seg) { return segalloc_mark(arg, seg); }

/* A blank volume: an empty file, or a pre-sized file or device whose first
 * segment is all zeros. Anything else must carry a superblock. */
static int is_blank(par_file *f, int *blank) {
  *blank = f->size == 0;
  if (*blank || f->size < PAR_SEGMENT_SIZE) return PAR_OK;
  uint8_t *b = file_buf_alloc(PAR_SEGMENT_SIZE);
  if (!b) return par_error(PAR_ENOMEM, "volume probe");
  int rc = file_read(f, b, PAR_SEGMENT_SIZE, 0);
  size_t i = 0;
  while (!rc && i < PAR_SEGMENT_SIZE && !b[i]) i++;
  *blank = !rc && i == PAR_SEGMENT_SIZE;
  free(b);
  return rc;
}

PAR_API int par_open(const char *path, const par_options *opts, par_volume **out) {
  if (!path || !out) return par_error(PAR_EINVAL, "par_open: path and out must not be NULL");
  *out = NULL;
  par_options o;
  if (opts) o = *opts;
  else par_options_init(&o);
  int rc = check_options(&o);
  if (rc) return rc;
  par_volume *v = calloc(1, sizeof *v);
  if (!v) return par_error(PAR_ENOMEM, "volume");
  v->opts = o;
  membudget_init(&v->budget, (uint64_t)o.memory_budget_mib << 20);
  atomic_store(&v->warm_left, warm_budget(&o));
  rc = file_open(&v->file, path, o.create_if_missing, o.use_direct_io, o.max_volume_size);
  if (rc) {
    free(v);
    return rc;
  }
  int fresh;
  rc = is_blank(&v->file, &fresh);
  if (!rc && fresh && v->file.size > 0 && !o.format_existing)
    rc = par_error(PAR_ENOTVOLUME,
                   "%s is not a volume: it is not empty but its first %u bytes are zeros (a "
                   "pre-sized file, a new device, or someone's data); set format_existing to "
                   "format it, which overwrites it", path, PAR_SEGMENT_SIZE);
  else if (!rc && fresh && !v->file.size && !o.create_if_missing)
    rc = par_error(PAR_ENOTVOLUME, "%s is empty and create_if_missing is off", path);
  if (!rc) rc = resident_init(v, path);
  if (!rc && fresh) rc = file_grow(&v->file, PAR_SEGMENT_SIZE);
  if (!rc) rc = segalloc_init(&v->alloc, &v->file);
  if (!rc && fresh) {
    rc = redolog_format(&v->log, &v->file, &v->alloc);
    if (!rc) {
      redolog_close(&v->log);
      segalloc_destroy(&v->alloc);
      rc = segalloc_init(&v->alloc, &v->file);
    }
  }
  if (!rc) rc = redolog_load(&v->log, &v->file, &v->alloc, &v->cat);
  if (!rc) resident_load(v); /* before the open's superblock update below */
  for (uint32_t i = 0; !rc && i < v->cat.n; i++)
    rc = region_desc_for_each_seg(v->cat.regions[i], mark_seg, &v->alloc);
  /* A full volume opens with the recovered stream; the first catalog change
   * checkpoints it (redolog.h), or fails with PAR_ENOSPC as it would anyway. */
  if (!rc && (rc = redolog_checkpoint(&v->log, &v->cat)) == PAR_ENOSPC) rc = PAR_OK;
  if (!rc) segalloc_settle(&v->alloc);
  pthread_mutex_init(&v->meta_mu, NULL);
  pthread_mutex_init(&v->txn_mu, NULL);
  pthread_mutex_init(&v->ckpt_mu, NULL);
  pthread_rwlock_init(&v->region_lock, NULL);
  if (!rc) rc = compaction_start(&v->workers, v->opts.compaction_threads);
  if (rc) {
    int saved = rc;
    char msg[512];
    snprintf(msg, sizeof msg, "%s", par_last_error());
    catalog_free(&v->cat);
    redolog_close(&v->log);
    segalloc_destroy(&v->alloc);
    file_close(&v->file);
    resident_free(v);
    pthread_mutex_destroy(&v->meta_mu);
    pthread_mutex_destroy(&v->txn_mu);
    pthread_mutex_destroy(&v->ckpt_mu);
    pthread_rwlock_destroy(&v->region_lock);
    membudget_destroy(&v->budget);
    free(v);
    return par_error(saved, "cannot open volume %s: %s", path, msg);
  }
  segalloc_start_forgetter(&v->alloc);
  *out = v;
  return PAR_OK;
}

PAR_API int par_close(par_volume *v) {
  if (!v) return par_error(PAR_EINVAL, "par_close: NULL volume");
  int rc = PAR_OK;
  for (;;) {
    pthread_mutex_lock(&v->meta_mu);
    par_region *r = v->open;
    pthread_mutex_unlock(&v->meta_mu);
    if (!r) break;
    int rc2 = par_region_close(r);
    if (rc2 && !rc) rc = rc2;
  }
  compaction_stop(&v->workers);
  segalloc_stop_forgetter(&v->alloc); /* the closes' frees leave the cache before the record is taken */
  pthread_mutex_lock(&v->meta_mu);
  /* Only compacts the redo log: on a full volume the current stream stays. */
  int rc2 = redolog_checkpoint(&v->log, &v->cat);
  pthread_mutex_unlock(&v->meta_mu);
  if (rc2 && rc2 != PAR_ENOSPC && !rc) rc = rc2;
  segalloc_trim(&v->alloc, 1); /* a closed volume holds only the floor free */
  if (!rc) resident_save(v); /* the superblock is final */
  catalog_free(&v->cat);
  redolog_close(&v->log);
  segalloc_destroy(&v->alloc);
  file_close(&v->file);
  resident_free(v);
  pthread_mutex_destroy(&v->meta_mu);
  pthread_mutex_destroy(&v->txn_mu);
  pthread_mutex_destroy(&v->ckpt_mu);
  pthread_rwlock_destroy(&v->region_lock);
  membudget_destroy(&v->budget);
  free(v);
  return rc;
}

static int check_name(const char *name) {
  if (!name) return par_error(PAR_EINVAL, "region name must not be NULL");
  size_t n = strlen(name);
  if (n == 0) return par_error(PAR_EINVAL, "region name must not be empty");
  if (n > PAR_MAX_REGION_NAME)
    return par_error(PAR_ETOOBIG, "region name of %zu bytes exceeds the limit of %u", n, PAR_MAX_REGION_NAME);
  return PAR_OK;
}

/* Creates the region's catalog entry (meta_mu held). */
int volume_create_region(par_volume *v, const char *name) {
  if (catalog_find(&v->cat, name)) return par_error(PAR_EEXIST, "region '%s' already exists", name);
  if (v->cat.n >= PAR_MAX_REGIONS) return par_error(PAR_ELIMIT, "the volume already holds %u regions", PAR_MAX_REGIONS);
  region_desc d;
  memset(&d, 0, sizeof d);
  d.id = v->cat.next_region_id;
  snprintf(d.name, sizeof d.name, "%s", name);
  uint64_t ticket;
  int rc = redolog_put_region(&v->log, &d, NULL, 0, &ticket);
  if (!rc) rc = redolog_sync(&v->log, ticket);
  if (!rc) rc = catalog_set(&v->cat, &d); /* durable: apply it as replay would */
  if (!rc) v->cat.next_region_id = d.id + 1;
  return rc;
}

PAR_API int par_region_create(par_volume *v, const char *name) {
  if (!v) return par_error(PAR_EINVAL, "par_region_create: NULL volume");
  int rc = check_name(name);
  if (rc) return rc;
  pthread_mutex_lock(&v->meta_mu);
  rc = volume_create_region(v, name);
  pthread_mutex_unlock(&v->meta_mu);
  return rc;
}

static int free_seg(void *arg, uint32_t seg) {
  segalloc_free(arg, seg);
  return PAR_OK;
}

PAR_API int par_region_drop(par_volume *v, const char *name) {
  if (!v) return par_error(PAR_EINVAL, "par_region_drop: NULL volume");
  int rc = check_name(name);
  if (rc) return rc;
  pthread_mutex_lock(&v->meta_mu);
  region_desc *d = catalog_find(&v->cat, name);
  if (!d) rc = par_error(PAR_ENOENT, "no region named '%s'", name);
  for (par_region *r = v->open; !rc && r; r = r->next_open)
    if (r->id == d->id) rc = par_error(PAR_EBUSY, "region '%s' is open", name);
  if (!rc) rc = redolog_drop_region(&v->log, d->id);
  if (!rc) {
    region_desc_for_each_seg(d, free_seg, &v->alloc);
    catalog_remove(&v->cat, d->id);
  }
  pthread_mutex_unlock(&v->meta_mu);
  if (!rc) segalloc_trim(&v->alloc, 0);
  return rc;
}

PAR_API int par_region_list(par_volume *v, void (*fn)(const char *name, void *arg), void *arg) {
  if (!v || !fn) return par_error(PAR_EINVAL, "par_region_list: NULL argument");
  pthread_mutex_lock(&v->meta_mu);
  uint32_t n = v->cat.n;
  char (*names)[PAR_MAX_REGION_NAME + 1] = malloc((n ? n : 1) * sizeof *names);
  if (names)
    for (uint32_t i = 0; i < n; i++) memcpy(names[i], v->cat.regions[i]->name, sizeof names[i]);
  pthread_mutex_unlock(&v->meta_mu);
  if (!names) return par_error(PAR_ENOMEM, "region list");
  for (uint32_t i = 0; i < n; i++) fn(names[i], arg); /* fn may call back into the volume */
  free(names);
  return PAR_OK;
}

PAR_API int par_volume_stats_get(par_volume *v, par_volume_stats *out) {
  if (!v || !out) return par_error(PAR_EINVAL, "par_volume_stats_get: NULL argument");
  memset(out, 0, sizeof *out);
  uint32_t total, used;
  segalloc_counts(&v->alloc, &total, &used);
  out->segments_total = total;
  out->segments_used = used;
  out->volume_bytes = __atomic_load_n(&v->file.size, __ATOMIC_ACQUIRE);
  pthread_mutex_lock(&v->meta_mu);
  out->metadata_bytes = v->log.bytes;
  pthread_mutex_unlock(&v->meta_mu);
  out->memory_budget = v->budget.limit;
  out->memory_used = atomic_load(&v->budget.used);
  out->memory_peak = atomic_load(&v->budget.peak);
  out->segments_released = segalloc_released(&v->alloc);
  return PAR_OK;
}
