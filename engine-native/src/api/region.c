/* Regions: open/recover/close, the write path, maintenance and counters
 * (reads are in read.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"
#include "util/status.h"

view *region_acquire_view(par_region *r, uint64_t *lsn) {
  pthread_mutex_lock(&r->view_mu);
  view *w = r->view;
  atomic_fetch_add(&w->refs, 1);
  /* Read under view_mu: a freeze (which also holds write_mu) cannot slip
   * between the LSN and the view, so no tree in w holds a newer entry. */
  *lsn = atomic_load(&r->last_lsn);
  pthread_mutex_unlock(&r->view_mu);
  return w;
}

int region_persist(par_region *r, desc_edit_fn fn, void *arg) {
  par_volume *v = r->vol;
  pthread_mutex_lock(&v->meta_mu);
  region_desc *cur = catalog_find_id(&v->cat, r->id);
  region_desc d;
  seg_list freed = {0};
  int rc = region_desc_copy(&d, cur);
  if (!rc) rc = fn(&d, arg, &freed);
  if (!rc) rc = redolog_put_region(&v->log, &d, freed.v, freed.n);
  if (!rc) {
    region_desc_free(cur);
    *cur = d;
    /* Bound the redo log. A failed checkpoint leaves the current stream in
     * place, which stays correct; the next commit tries again. */
    if (v->log.bytes > REDO_CHECKPOINT_BYTES) redolog_checkpoint(&v->log, &v->cat);
  } else {
    region_desc_free(&d);
  }
  pthread_mutex_unlock(&v->meta_mu);
  seg_list_free(&freed);
  return rc;
}

/* ---- WAL segments ---- */

typedef struct wal_add {
  wal_seg w;
} wal_add;

static int edit_add_wal(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  const wal_add *a = arg;
  d->wal_gen = a->w.gen;
  return region_desc_add_wal(d, a->w);
}

static int new_wal_segment(void *ctx, uint64_t first_lsn, uint32_t *seg) {
  par_region *r = ctx;
  int rc = segalloc_alloc(&r->vol->alloc, seg);
  if (rc) return rc;
  wal_add a = {{*seg, r->wal.gen, first_lsn}};
  rc = region_persist(r, edit_add_wal, &a);
  if (rc) segalloc_free(&r->vol->alloc, *seg);
  return rc;
}

/* ---- large-log segments ---- */

typedef struct vlog_add {
  uint32_t seg, inc, n;
  const vptr *left;
} vlog_add;

static int edit_add_vlog(region_desc *d, void *arg, seg_list *freed) {
  (void)freed;
  vlog_add *a = arg;
  if (a->left) garbage_close_head(d, *a->left);
  a->inc = ++d->next_inc;
  /* A single segment becomes a head; a run holds one huge value, written whole. */
  return region_desc_add_vlog(d, (vlog_seg){a->seg, a->inc, 0, a->n, a->n == 1});
}

static int new_vlog_segment(void *ctx, uint32_t n, const vptr *left, uint32_t *seg,
                            uint32_t *inc) {
  par_region *r = ctx;
  int rc = segalloc_alloc_run(&r->vol->alloc, n, seg);
  if (rc) return rc;
  vlog_add a = {*seg, 0, n, left};
  rc = region_persist(r, edit_add_vlog, &a);
  if (rc)
    for (uint32_t i = 0; i < n; i++) segalloc_free(&r->vol->alloc, *seg + i);
  *inc = a.inc;
  return rc;
}

/* The WAL's pointer records reach the disk after the values they point to,
 * and those are durable first: one fdatasync covering both would let a power
 * cut keep the WAL block and lose the value (the key would then fail its
 * reads; for a GC relocation, the index would point at the torn copy while
 * the next GC pass frees the good one). Called by the WAL writer thread only,
 * which alone touches large_synced. */
static int flush_large_logs(void *ctx) {
  par_region *r = ctx;
  int rc = vlog_flush(&r->hot);
  if (!rc) rc = vlog_flush(&r->cold);
  uint64_t written = vlog_written(&r->hot) + vlog_written(&r->cold);
  if (!rc && written != r->large_synced) {
    rc = file_sync(&r->vol->file);
    if (!rc) r->large_synced = written;
  }
  return rc;
}

/* ---- open / close ---- */


typedef struct replay_ctx {
  par_region *r;
} replay_ctx;

static int replay_op(void *arg, uint64_t lsn, const wal_op *op) {
  par_region *r = ((replay_ctx *)arg)->r;
  int rc = PAR_OK;
  memtable *m;
  while (!(m = region_make_room(r, &rc)) && rc == PAR_EBUSY)
    if ((rc = region_wait_room(r))) return rc;
  if (!m) return rc;
  rc = memtable_insert(m, lsn, op->type, op->key, op->key_len, op->value, op->value_len);
  if (!rc) atomic_store(&r->last_lsn, lsn);
  return rc;
}

static void region_free(par_region *r) {
  view_unref(r->view);
  free(r->pending);
  pthread_mutex_destroy(&r->write_mu);
  pthread_mutex_destroy(&r->view_mu);
  pthread_mutex_destroy(&r->live_mu);
  pthread_cond_destroy(&r->view_cv);
  free(r);
}

static void unlink_open(par_volume *v, par_region *r) {
  pthread_mutex_lock(&v->meta_mu);
  for (par_region **p = &v->open; *p; p = &(*p)->next_open)
    if (*p == r) {
      *p = r->next_open;
      break;
    }
  pthread_mutex_unlock(&v->meta_mu);
}

static int build_view(par_region *r, const region_desc *d) {
  view *w = view_create(r);
  if (!w) return par_error(PAR_ENOMEM, "view");
  r->view = w;
  w->active = memtable_create();
  if (!w->active) return par_error(PAR_ENOMEM, "L0");
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      if (!d->level[i][j].root) continue;
      tree_desc t;
      if (tree_desc_copy(&t, &d->level[i][j])) return par_error(PAR_ENOMEM, "tree");
      w->tree[i][j] = dtree_create(&r->vol->alloc, &t);
      if (!w->tree[i][j]) {
        tree_desc_free(&t);
        return par_error(PAR_ENOMEM, "tree");
      }
    }
  return PAR_OK;
}

PAR_API int par_region_open(par_volume *v, const char *name, int create, par_region **out) {
  if (!v || !name || !out) return par_error(PAR_EINVAL, "par_region_open: NULL argument");
  *out = NULL;
  if (!*name || strlen(name) > PAR_MAX_REGION_NAME)
    return par_error(strlen(name) ? PAR_ETOOBIG : PAR_EINVAL, "region name must be 1..%u bytes", PAR_MAX_REGION_NAME);
  par_region *r = calloc(1, sizeof *r);
  if (!r) return par_error(PAR_ENOMEM, "region");
  r->vol = v;
  pthread_mutex_init(&r->write_mu, NULL);
  pthread_mutex_init(&r->view_mu, NULL);
  pthread_mutex_init(&r->live_mu, NULL);
  pthread_cond_init(&r->view_cv, NULL);

  /* Claim the region in the catalog and copy its description. */
  pthread_mutex_lock(&v->meta_mu);
  region_desc *cur = catalog_find(&v->cat, name);
  int rc = PAR_OK;
  if (!cur && create) {
    rc = volume_create_region(v, name);
    cur = catalog_find(&v->cat, name);
  } else if (!cur) {
    rc = par_error(PAR_ENOENT, "no region named '%s'", name);
  }
  for (par_region *o = v->open; !rc && o; o = o->next_open)
    if (o->id == cur->id) rc = par_error(PAR_EBUSY, "region '%s' is already open", name);
  region_desc d;
  memset(&d, 0, sizeof d);
  if (!rc) rc = region_desc_copy(&d, cur);
  if (!rc) {
    r->id = cur->id;
    r->keys = (key_source){&v->file, r->id};
    snprintf(r->name, sizeof r->name, "%s", name);
    r->next_open = v->open;
    v->open = r;
  }
  pthread_mutex_unlock(&v->meta_mu);
  if (rc) {
    region_free(r);
    return rc;
  }

  /* Recover: the levels from the catalog, L0 from the WAL. */
  rc = build_view(r, &d);
  uint64_t last = d.covered_lsn;
  replay_ctx ctx = {r};
  if (!rc) rc = wal_replay(&v->file, &d, replay_op, &ctx, &last);
  if (!rc) rc = wal_check_end(&v->file, &d, last);
  uint32_t gen = d.wal_gen + 1;
  region_desc_free(&d);
  if (!rc) {
    r->next_lsn = last + 1;
    atomic_store(&r->last_lsn, last);
    rc = vlog_init(&r->hot, &v->file, r->id, new_vlog_segment, r);
    if (!rc) rc = vlog_init(&r->cold, &v->file, r->id, new_vlog_segment, r);
    /* On a full volume the count waits for a later session: nothing is lost. */
    if (!rc && (rc = gc_count_crashed_heads(r)) == PAR_ENOSPC) rc = PAR_OK;
    if (!rc) rc = wal_start(&r->wal, &v->file, r->id, gen, v->opts.durability_interval_ms, last,
                            new_wal_segment, flush_large_logs, r);
    if (!rc) atomic_store(&r->logging, 1);
  }
  if (rc) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", par_last_error());
    pthread_mutex_lock(&r->view_mu);
    r->closing = 1;
    pthread_mutex_unlock(&r->view_mu);
    compaction_drain(r);
    unlink_open(v, r);
    if (r->hot.buf) vlog_destroy(&r->hot);
    if (r->cold.buf) vlog_destroy(&r->cold);
    region_free(r);
    return par_error(rc, "cannot open region '%s': %s", name, msg);
  }
  compaction_schedule(r);
  *out = r;
  return PAR_OK;
}

/* A head segment's unwritten tail is never appended to again (the next
 * session starts fresh segments), so it counts as garbage: GC then collects
 * a segment that short sessions left mostly empty. (After a crash the next
 * open counts it: gc_count_crashed_heads.) */
static int count_head_tails(par_region *r) {
  garbage_list g = {0};
  vlog *heads[2] = {&r->hot, &r->cold};
  for (int i = 0; i < 2; i++) {
    uint32_t used = (uint32_t)ALIGN_UP(heads[i]->base + heads[i]->fill, PAR_BLOCK);
    if (heads[i]->seg)
      garbage_add(&g, (vptr){heads[i]->seg, used, heads[i]->inc, PAR_SEGMENT_SIZE - used});
  }
  int rc = g.n ? garbage_close_heads(r, &g) : PAR_OK;
  garbage_free(&g);
  return rc;
}

PAR_API int par_region_close(par_region *r) {
  if (!r) return par_error(PAR_EINVAL, "par_region_close: NULL region");
  par_volume *v = r->vol;
  pthread_mutex_lock(&v->sched_mu);
  pthread_mutex_lock(&r->view_mu);
  r->closing = 1;
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&v->sched_mu);
  compaction_drain(r);
  int rc = wal_stop(&r->wal); /* also writes the large logs' buffers */
  /* On a full volume the count waits for a later session: nothing is lost. */
  if (!rc && (rc = count_head_tails(r)) == PAR_ENOSPC) rc = PAR_OK;
  vlog_destroy(&r->hot);
  vlog_destroy(&r->cold);
  unlink_open(v, r);
  region_free(r);
  return rc;
}

/* ---- writes ---- */

/* Freezes the active L0 and installs a fresh one (write_mu and view_mu
 * held, no frozen L0). */
static int freeze(par_region *r) {
  view *w = r->view;
  memtable *m = memtable_create();
  view *n = m ? view_clone(w) : NULL;
  if (!n) {
    memtable_unref(m);
    return par_error(PAR_ENOMEM, "new L0");
  }
  n->frozen = n->active; /* the clone's reference moves over */
  n->active = m;
  r->view = n;
  view_unref(w);
  pthread_cond_broadcast(&r->view_cv);
  return PAR_OK;
}

/* Returns the L0 to insert into, freezing a full one or stalling while the
 * previous frozen L0 is still being compacted (write_mu held). */
memtable *region_make_room(par_region *r, int *rc) {
  pthread_mutex_lock(&r->view_mu);
  view *w = r->view;
  memtable *m = NULL;
  int froze = 0;
  if (atomic_load(&w->active->bytes) < r->vol->opts.l0_size) {
    m = w->active;
  } else if (!w->frozen) {
    *rc = freeze(r);
    m = *rc ? NULL : r->view->active;
    froze = !*rc;
  } else {
    *rc = PAR_EBUSY;
  }
  pthread_mutex_unlock(&r->view_mu);
  if (froze) compaction_schedule(r);
  return m;
}

int region_wait_room(par_region *r) {
  int retried = 0, rc = PAR_OK;
  pthread_mutex_lock(&r->view_mu);
  atomic_fetch_add(&r->stats.stalls, 1);
  while (r->view->frozen && atomic_load(&r->view->active->bytes) >= r->vol->opts.l0_size) {
    if (r->failed == PAR_ENOSPC && !retried) {
      /* Space may have been freed since (a region dropped): try once more. */
      retried = 1;
      r->failed = 0;
      pthread_mutex_unlock(&r->view_mu);
      compaction_schedule(r);
      pthread_mutex_lock(&r->view_mu);
      continue;
    }
    if (r->failed) {
      rc = par_error(r->failed, "L0 is full and compaction failed: %s", par_strerror(r->failed));
      break;
    }
    pthread_cond_wait(&r->view_cv, &r->view_mu);
  }
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}

int region_check_key(const void *key, size_t key_len) {
  if (!key) return par_error(PAR_EINVAL, "key must not be NULL");
  if (key_len == 0) return par_error(PAR_EINVAL, "keys must not be empty");
  if (key_len > PAR_MAX_KEY_SIZE)
    return par_error(PAR_ETOOBIG, "key of %zu bytes exceeds the limit of %u", key_len, PAR_MAX_KEY_SIZE);
  return PAR_OK;
}

static int check_value(const void *value, size_t value_len) {
  if (!value && value_len) return par_error(PAR_EINVAL, "value must not be NULL");
  if (value_len > PAR_MAX_VALUE_SIZE)
    return par_error(PAR_ETOOBIG, "value of %zu bytes exceeds the limit of %u", value_len, PAR_MAX_VALUE_SIZE);
  return PAR_OK;
}

enum { CLASS_SMALL, CLASS_MEDIUM, CLASS_LARGE };

static int size_class(const par_options *o, size_t pair) {
  return pair < o->small_threshold ? CLASS_SMALL : pair < o->large_threshold ? CLASS_MEDIUM : CLASS_LARGE;
}

/* Whether a put's value goes to the large log under the placement policy. */
static int goes_to_large_log(const par_options *o, int cls, size_t value_len) {
  if (value_len > PAR_MAX_INLINE_VALUE) return 1;
  switch (o->placement) {
  case PAR_PLACEMENT_IN_LOG: return 1;
  case PAR_PLACEMENT_IN_PLACE: return 0;
  default: return cls == CLASS_LARGE;
  }
}

/* Logs and applies ops atomically: one WAL record, LSNs in order. Values
 * bound for the large log are appended there first, and the WAL record
 * carries their pointers (write_mu held). */
static int log_and_insert(par_region *r, memtable *m, uint64_t lsn, const wal_op *ops, uint32_t n) {
  const par_options *o = &r->vol->opts;
  wal_op *logged = NULL;
  uint8_t *ptrs = NULL;
  int rc = PAR_OK;
  for (uint32_t i = 0; i < n && !rc; i++) {
    if (ops[i].type != WAL_PUT ||
        !goes_to_large_log(o, size_class(o, ops[i].key_len + ops[i].value_len), ops[i].value_len))
      continue;
    if (!logged) {
      logged = malloc(n * sizeof *logged);
      ptrs = malloc((size_t)n * VPTR_SIZE);
      if (!logged || !ptrs) {
        rc = par_error(PAR_ENOMEM, "large-log pointers");
        break;
      }
      memcpy(logged, ops, n * sizeof *logged);
    }
    vptr p;
    if (vlog_record_size(ops[i].key_len, ops[i].value_len) > PAR_SEGMENT_SIZE)
      rc = vlog_append_huge(&r->hot, lsn + i, ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len, &p);
    else
      rc = vlog_append(&r->hot, lsn + i, ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len, &p);
    if (rc) break;
    vptr_encode(ptrs + (size_t)i * VPTR_SIZE, p);
    logged[i].type = WAL_PUT_LARGE;
    logged[i].value = ptrs + (size_t)i * VPTR_SIZE;
    logged[i].value_len = VPTR_SIZE;
  }
  const wal_op *w = logged ? logged : ops;
  if (!rc) rc = wal_append(&r->wal, lsn, w, n);
  for (uint32_t i = 0; !rc && i < n; i++)
    rc = memtable_insert(m, lsn + i, w[i].type, w[i].key, w[i].key_len, w[i].value, w[i].value_len);
  free(logged);
  free(ptrs);
  return rc;
}

static int apply(par_region *r, const wal_op *ops, uint32_t n, unsigned flags) {
  int rc = PAR_OK;
  memtable *m;
  /* Never wait for a compaction holding write_mu: GC needs it to finish. */
  for (;;) {
    pthread_mutex_lock(&r->write_mu);
    m = region_make_room(r, &rc);
    if (m || rc != PAR_EBUSY) break;
    pthread_mutex_unlock(&r->write_mu);
    if ((rc = region_wait_room(r))) return rc;
  }
  uint64_t lsn = r->next_lsn;
  if (m) rc = log_and_insert(r, m, lsn, ops, n);
  if (m && !rc) {
    r->next_lsn = lsn + n;
    atomic_store(&r->last_lsn, lsn + n - 1);
  }
  pthread_mutex_unlock(&r->write_mu);
  if (!rc) {
    uint64_t bytes = 0;
    for (uint32_t i = 0; i < n; i++) {
      size_t pair = ops[i].key_len + ops[i].value_len;
      bytes += pair;
      if (ops[i].type == WAL_PUT) {
        int cls = size_class(&r->vol->opts, pair);
        atomic_fetch_add(&r->stats.class_puts[cls], 1);
        atomic_fetch_add(&r->stats.class_bytes[cls], pair);
      }
      atomic_fetch_add(ops[i].type == WAL_PUT ? &r->stats.puts : &r->stats.deletes, 1);
    }
    atomic_fetch_add(&r->stats.user_bytes, bytes);
  }
  if (!rc && (flags & PAR_SYNC)) rc = wal_sync(&r->wal, lsn + n - 1);
  return rc;
}

PAR_API int par_put(par_region *r, const void *key, size_t key_len, const void *value,
                    size_t value_len, unsigned flags) {
  if (!r) return par_error(PAR_EINVAL, "par_put: NULL region");
  int rc = region_check_key(key, key_len);
  if (!rc) rc = check_value(value, value_len);
  if (rc) return rc;
  wal_op op = {WAL_PUT, (uint16_t)key_len, (uint32_t)value_len, key, value};
  return apply(r, &op, 1, flags);
}

PAR_API int par_delete(par_region *r, const void *key, size_t key_len, unsigned flags) {
  if (!r) return par_error(PAR_EINVAL, "par_delete: NULL region");
  int rc = region_check_key(key, key_len);
  if (rc) return rc;
  wal_op op = {WAL_DELETE, (uint16_t)key_len, 0, key, NULL};
  return apply(r, &op, 1, flags);
}

PAR_API int par_sync(par_region *r) {
  if (!r) return par_error(PAR_EINVAL, "par_sync: NULL region");
  return wal_sync(&r->wal, atomic_load(&r->last_lsn));
}

/* ---- batches ---- */

struct par_batch {
  wal_op *ops;
  uint32_t n, cap;
  uint8_t *data; /* keys and values, copied */
  size_t len, data_cap, encoded;
};

PAR_API int par_batch_create(par_batch **out) {
  if (!out) return par_error(PAR_EINVAL, "par_batch_create: NULL out");
  *out = calloc(1, sizeof **out);
  return *out ? PAR_OK : par_error(PAR_ENOMEM, "batch");
}

static int batch_add(par_batch *b, uint8_t type, const void *key, size_t key_len, const void *value,
                     size_t value_len) {
  /* The WAL record holds a pointer for a value that always goes to the large log. */
  size_t enc = wal_op_size(key_len, value_len > PAR_MAX_INLINE_VALUE ? VPTR_SIZE : value_len);
  if (b->encoded + enc > PAR_MAX_BATCH_SIZE)
    return par_error(PAR_ETOOBIG, "batch would exceed %u encoded bytes", PAR_MAX_BATCH_SIZE);
  if (b->n == b->cap) {
    uint32_t cap = b->cap ? b->cap * 2 : 16;
    wal_op *ops = realloc(b->ops, cap * sizeof *ops);
    if (!ops) return par_error(PAR_ENOMEM, "batch");
    b->ops = ops;
    b->cap = cap;
  }
  if (b->len + key_len + value_len > b->data_cap) {
    size_t cap = b->data_cap ? b->data_cap : 4096;
    while (cap < b->len + key_len + value_len) cap *= 2;
    uint8_t *d = realloc(b->data, cap);
    if (!d) return par_error(PAR_ENOMEM, "batch");
    b->data = d;
    b->data_cap = cap;
  }
  /* Pointers are stored as offsets until par_write: data may move. */
  wal_op *op = &b->ops[b->n++];
  op->type = type;
  op->key_len = (uint16_t)key_len;
  op->value_len = (uint32_t)value_len;
  op->key = (const void *)(uintptr_t)b->len;
  memcpy(b->data + b->len, key, key_len);
  b->len += key_len;
  op->value = (const void *)(uintptr_t)b->len;
  if (value_len) memcpy(b->data + b->len, value, value_len);
  b->len += value_len;
  b->encoded += enc;
  return PAR_OK;
}

PAR_API int par_batch_put(par_batch *b, const void *key, size_t key_len, const void *value, size_t value_len) {
  if (!b) return par_error(PAR_EINVAL, "par_batch_put: NULL batch");
  int rc = region_check_key(key, key_len);
  if (!rc) rc = check_value(value, value_len);
  return rc ? rc : batch_add(b, WAL_PUT, key, key_len, value, value_len);
}

PAR_API int par_batch_delete(par_batch *b, const void *key, size_t key_len) {
  if (!b) return par_error(PAR_EINVAL, "par_batch_delete: NULL batch");
  int rc = region_check_key(key, key_len);
  return rc ? rc : batch_add(b, WAL_DELETE, key, key_len, NULL, 0);
}

PAR_API void par_batch_clear(par_batch *b) {
  if (!b) return;
  b->n = 0;
  b->len = 0;
  b->encoded = 0;
}

PAR_API size_t par_batch_count(const par_batch *b) { return b ? b->n : 0; }

PAR_API void par_batch_destroy(par_batch *b) {
  if (!b) return;
  free(b->ops);
  free(b->data);
  free(b);
}

PAR_API int par_write(par_region *r, const par_batch *b, unsigned flags) {
  if (!r || !b) return par_error(PAR_EINVAL, "par_write: NULL argument");
  if (!b->n) return PAR_OK;
  wal_op *ops = malloc(b->n * sizeof *ops);
  if (!ops) return par_error(PAR_ENOMEM, "batch");
  for (uint32_t i = 0; i < b->n; i++) {
    ops[i] = b->ops[i];
    ops[i].key = b->data + (uintptr_t)b->ops[i].key;
    ops[i].value = b->data + (uintptr_t)b->ops[i].value;
  }
  int rc = apply(r, ops, b->n, flags);
  free(ops);
  return rc;
}

/* ---- maintenance ---- */

PAR_API int par_flush(par_region *r) {
  if (!r) return par_error(PAR_EINVAL, "par_flush: NULL region");
  int rc;
  for (;;) {
    /* Wait for an earlier frozen L0 without holding write_mu (GC needs it). */
    pthread_mutex_lock(&r->view_mu);
    if (r->failed == PAR_ENOSPC) r->failed = 0; /* space may have been freed since: retry */
    int frozen = r->view->frozen != NULL;
    pthread_mutex_unlock(&r->view_mu);
    if (frozen) compaction_schedule(r);
    pthread_mutex_lock(&r->view_mu);
    while (r->view->frozen && !r->failed) pthread_cond_wait(&r->view_cv, &r->view_mu);
    rc = r->failed;
    pthread_mutex_unlock(&r->view_mu);
    if (rc) return par_error(rc, "compaction failed: %s", par_strerror(rc));
    pthread_mutex_lock(&r->write_mu);
    pthread_mutex_lock(&r->view_mu);
    frozen = r->view->frozen != NULL; /* a writer may have frozen one since */
    if (!frozen && r->view->active->entries) rc = freeze(r);
    pthread_mutex_unlock(&r->view_mu);
    pthread_mutex_unlock(&r->write_mu);
    if (!frozen) break;
  }
  if (rc) return rc;
  compaction_schedule(r);
  pthread_mutex_lock(&r->view_mu);
  while (!r->failed && (compaction_pending(r) || r->running)) {
    pthread_mutex_unlock(&r->view_mu);
    compaction_schedule(r);
    pthread_mutex_lock(&r->view_mu);
    if (!r->failed && (compaction_pending(r) || r->running)) pthread_cond_wait(&r->view_cv, &r->view_mu);
  }
  rc = r->failed;
  pthread_mutex_unlock(&r->view_mu);
  return rc ? par_error(rc, "compaction failed: %s", par_strerror(rc)) : PAR_OK;
}

PAR_API int par_compact(par_region *r) {
  int rc = par_flush(r);
  if (rc) return rc;
  pthread_mutex_lock(&r->view_mu);
  r->compact_all = 1;
  pthread_mutex_unlock(&r->view_mu);
  rc = par_flush(r); /* waits until no merge is left to run */
  pthread_mutex_lock(&r->view_mu);
  r->compact_all = 0;
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}

PAR_API int par_region_stats(par_region *r, par_stats *out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_region_stats: NULL argument");
  memset(out, 0, sizeof *out);
  out->puts = atomic_load(&r->stats.puts);
  out->deletes = atomic_load(&r->stats.deletes);
  out->gets = atomic_load(&r->stats.gets);
  out->scans = atomic_load(&r->stats.scans);
  out->user_bytes_written = atomic_load(&r->stats.user_bytes);
  out->compactions = atomic_load(&r->stats.compactions);
  out->write_stalls = atomic_load(&r->stats.stalls);
  out->last_lsn = atomic_load(&r->last_lsn);
  out->small_puts = atomic_load(&r->stats.class_puts[CLASS_SMALL]);
  out->medium_puts = atomic_load(&r->stats.class_puts[CLASS_MEDIUM]);
  out->large_puts = atomic_load(&r->stats.class_puts[CLASS_LARGE]);
  out->small_bytes = atomic_load(&r->stats.class_bytes[CLASS_SMALL]);
  out->medium_bytes = atomic_load(&r->stats.class_bytes[CLASS_MEDIUM]);
  out->large_bytes = atomic_load(&r->stats.class_bytes[CLASS_LARGE]);
  out->gc_runs = atomic_load(&r->stats.gc_runs);
  out->gc_bytes_scanned = atomic_load(&r->stats.gc_scanned);
  out->gc_bytes_relocated = atomic_load(&r->stats.gc_relocated);
  out->gc_segments_freed = atomic_load(&r->stats.gc_freed);
  out->medium_log_bytes_written = atomic_load(&r->stats.medium_written);
  out->medium_log_value_reads = atomic_load(&r->stats.log_value_reads[0]);
  out->large_log_value_reads = atomic_load(&r->stats.log_value_reads[1]);
  pthread_mutex_lock(&r->hot.mu);
  out->large_log_bytes_appended = r->hot.bytes;
  pthread_mutex_unlock(&r->hot.mu);
  pthread_mutex_lock(&r->cold.mu);
  out->large_log_bytes_appended += r->cold.bytes;
  pthread_mutex_unlock(&r->cold.mu);
  pthread_mutex_lock(&r->wal.mu);
  out->wal_bytes_appended = r->wal.bytes;
  out->wal_syncs = r->wal.syncs;
  pthread_mutex_unlock(&r->wal.mu);
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  out->wal_segments = d ? d->nwal : 0;
  for (uint32_t i = 0; d && i < d->nvlog; i++) {
    out->large_log_garbage_bytes += d->vlog[i].garbage;
    out->large_log_segments += d->vlog[i].nsegs;
  }
  pthread_mutex_unlock(&r->vol->meta_mu);
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  out->l0_bytes = atomic_load(&w->active->bytes);
  pthread_rwlock_rdlock(&w->active->lock);
  out->l0_entries = w->active->entries;
  pthread_rwlock_unlock(&w->active->lock);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++) {
    par_level_stats *l = &out->level[i];
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = w->tree[i][j];
      if (!t) continue;
      l->live_bytes += t->d.bytes;
      out->medium_log_segments += t->d.msegs.n;
      l->entries += t->d.entries;
      l->segments += t->d.segs.n;
      if (t->d.height > l->height) l->height = t->d.height;
      out->levels = (uint32_t)i;
    }
    l->compaction_bytes_read = atomic_load(&r->stats.level[i].read);
    l->compaction_bytes_written = atomic_load(&r->stats.level[i].written);
    out->level_small_bytes[i] = atomic_load(&r->stats.level[i].class_bytes[0]);
    out->level_medium_bytes[i] = atomic_load(&r->stats.level[i].class_bytes[1]);
    out->level_large_bytes[i] = atomic_load(&r->stats.level[i].class_bytes[2]);
  }
  view_unref(w);
  return PAR_OK;
}
