/* The write path: size classes and placement, the WAL record, the L0
 * insert, and the stall when L0 is full (batches are in batch.c). */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/internal.h"
#include "parallax/replication.h"
#include "util/clock.h"
#include "util/coding.h"
#include "util/status.h"

/* Freezes the active L0 and installs a fresh one (write_mu and view_mu
 * held, no frozen L0). */
int region_freeze(par_region *r) {
  view *w = r->view;
  memtable *m = memtable_create();
  if (m) memtable_set_budget(m, &r->vol->budget);
  view *n = m ? view_clone(w) : NULL;
  if (!n) {
    memtable_unref(m);
    return par_error(PAR_ENOMEM, "new L0");
  }
  n->frozen = n->active; /* the clone's reference moves over */
  n->active = m;
  region_set_view(r, n);
  pthread_cond_broadcast(&r->view_cv);
  return PAR_OK;
}

void region_freeze_if_wanted(par_region *r) {
  if (!atomic_exchange(&r->freeze_wanted, 0)) return;
  pthread_mutex_lock(&r->write_mu);
  pthread_mutex_lock(&r->view_mu);
  if (!r->closing && !r->view->frozen && r->view->active->entries) (void)region_freeze(r);
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->write_mu);
}

/* An L0 is full at l0_size bytes of memory, or once its entries point at
 * L0_LARGE_FACTOR x l0_size (at least L0_LARGE_MIN) bytes of large-log
 * records: a large value costs L0 only its pointer, and the garbage among
 * them (overwritten versions) is found only by the merge of this L0, so an
 * L0 left to fill by memory alone would let overwrites of large values grow
 * the volume by up to 4 M values (64 MiB of 16-byte pointers) before any of
 * them could be collected. */
int l0_full(const par_region *r, memtable *m) {
  uint64_t l0 = r->vol->opts.l0_size;
  uint64_t large = l0 * L0_LARGE_FACTOR > L0_LARGE_MIN ? l0 * L0_LARGE_FACTOR : L0_LARGE_MIN;
  return atomic_load(&m->bytes) >= l0 || atomic_load(&m->large_bytes) >= large;
}

/* Returns the L0 to insert into, freezing a full one or stalling while the
 * previous frozen L0 is still being compacted (write_mu held). */
memtable *region_make_room(par_region *r, int *rc) {
  /* The active L0 is stable while write_mu is held (only a freeze, which
   * needs it, replaces it): the common case does not touch view_mu. */
  pthread_mutex_lock(&r->cur_mu);
  memtable *m = r->view->active;
  pthread_mutex_unlock(&r->cur_mu);
  if (!l0_full(r, m)) return m;
  pthread_mutex_lock(&r->view_mu);
  view *w = r->view;
  m = NULL;
  int froze = 0;
  if (!l0_full(r, w->active)) {
    m = w->active;
  } else if (!w->frozen) {
    *rc = region_freeze(r);
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
  while (r->view->frozen && l0_full(r, r->view->active)) {
    if (failed_for_room(r->failed) && !retried) {
      /* Room may have been made since (a region dropped, GC): try once more. */
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

int region_check_value(const void *value, size_t value_len) {
  if (!value && value_len) return par_error(PAR_EINVAL, "value must not be NULL");
  if (value_len > PAR_MAX_VALUE_SIZE)
    return par_error(PAR_ETOOBIG, "value of %zu bytes exceeds the limit of %u", value_len, PAR_MAX_VALUE_SIZE);
  return PAR_OK;
}

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

/* Appends ops' values bound for the large log there (write_mu held) and
 * rewrites those ops, in logged (a copy of ops), to carry their pointers
 * (in ptrs). Every record appended is added to placed. unlogged: the ops
 * get no WAL record. */
static int place_large_values(par_region *r, uint64_t lsn, int unlogged, const wal_op *ops, uint32_t n,
                              wal_op *logged, uint8_t *ptrs, garbage_list *placed) {
  const par_options *o = &r->vol->opts;
  for (uint32_t i = 0; i < n; i++) {
    if (ops[i].type != WAL_PUT ||
        !goes_to_large_log(o, size_class(o, ops[i].key_len + ops[i].value_len), ops[i].value_len))
      continue;
    vptr p = {0};
    int rc = vlog_record_size(ops[i].key_len, ops[i].value_len) > PAR_SEGMENT_SIZE
                 ? vlog_append_huge(&r->hot, lsn + i, ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len, &p)
                 : vlog_append(&r->hot, lsn + i, unlogged, ops[i].key, ops[i].key_len, ops[i].value, ops[i].value_len, &p);
    if (rc) return rc;
    garbage_add(placed, p);
    vptr_encode(ptrs + (size_t)i * VPTR_SIZE, p);
    logged[i].type = WAL_PUT_LARGE;
    logged[i].value = ptrs + (size_t)i * VPTR_SIZE;
    logged[i].value_len = VPTR_SIZE;
  }
  return PAR_OK;
}

/* Logs and applies ops atomically: one WAL record, LSNs in order. Values
 * bound for the large log are appended there first, and the WAL record
 * carries their pointers. With PAR_NO_WAL the record is left out: the WAL
 * only learns that the LSNs were taken (wal_skip). With WRITE_PART the
 * record is a cross-region batch's part and nothing is inserted yet
 * (api/txn.c inserts once the batch commits). When logged_out is set
 * (n ops, and ptrs_out n pointers), the ops as logged are left there.
 * write_mu held.
 *
 * The L0 entries are allocated before the record is written, so that
 * nothing but a tree node (under 1 KiB) can fail after it: once the record
 * is written its LSNs are spent (next_lsn moves past them here: a reused
 * LSN would stop recovery at the duplicate), and a failed link stops the
 * region's writes until a reopen applies the record whole. Values already
 * in the large log of a write that fails before its record count as
 * garbage. */
int region_log_and_insert(par_region *r, memtable *m, uint64_t lsn, const wal_op *ops, uint32_t n,
                          unsigned mode, wal_op *logged_out, uint8_t *ptrs_out) {
  wal_op *logged = logged_out ? logged_out : malloc(n * sizeof *logged);
  uint8_t *ptrs = ptrs_out ? ptrs_out : malloc((size_t)n * VPTR_SIZE);
  int insert = !(mode & WRITE_PART);
  mt_entry **entries = insert ? malloc(n * sizeof *entries) : NULL;
  garbage_list placed = {0};
  int rc = logged && ptrs && (entries || !insert) ? PAR_OK : par_error(PAR_ENOMEM, "batch of %u", n);
  if (!rc) {
    memcpy(logged, ops, n * sizeof *logged);
    rc = place_large_values(r, lsn, (mode & PAR_NO_WAL) != 0, ops, n, logged, ptrs, &placed);
  }
  for (uint32_t i = 0; !rc && insert && i < n; i++)
    if (!(entries[i] = memtable_entry(m, lsn + i, logged[i].type, logged[i].key, logged[i].key_len,
                                      logged[i].value, logged[i].value_len)))
      rc = PAR_ENOMEM;
  if (!rc && (mode & PAR_NO_WAL)) {
    wal_skip(&r->wal, lsn + n - 1);
    atomic_store(&r->unlogged_lsn, lsn + n - 1);
  } else if (!rc && (mode & WRITE_PART)) {
    rc = wal_append_part(&r->wal, lsn, logged, n);
  } else if (!rc) {
    rc = wal_append(&r->wal, lsn, logged, n);
  }
  if (rc && placed.n) {
    /* Nothing will point at the values already in the large log: count
     * them as garbage so that GC frees their space (best effort: if this
     * fails too, the space waits for the segments' other values to die). */
    char msg[512];
    snprintf(msg, sizeof msg, "%s", par_last_error());
    garbage_persist(r, &placed);
    par_error(rc, "%s", msg);
  }
  int spent = !rc;
  if (spent) r->next_lsn = lsn + n;
  for (uint32_t i = 0; !rc && insert && i < n; i++) rc = memtable_link(m, entries[i]);
  if (rc && spent) {
    r->write_failed = rc;
    rc = par_error(rc, "the write is logged but L0 could not take it (%s): it is applied when the "
                       "region is reopened, and the region refuses writes until then",
                   par_last_error());
  } else if (!rc && insert) {
    atomic_store(&r->last_lsn, lsn + n - 1);
    uint64_t large = 0;
    for (uint32_t i = 0; i < placed.n; i++) large += placed.v[i].bytes;
    atomic_fetch_add(&m->large_bytes, large);
  }
  garbage_free(&placed);
  free(entries);
  if (logged != logged_out) free(logged);
  if (ptrs != ptrs_out) free(ptrs);
  return rc;
}

int region_check_flags(unsigned flags) {
  if (flags & ~(PAR_SYNC | PAR_NO_WAL)) return par_error(PAR_EINVAL, "unknown write flags 0x%x", flags);
  if ((flags & PAR_SYNC) && (flags & PAR_NO_WAL))
    return par_error(PAR_EINVAL, "PAR_SYNC and PAR_NO_WAL exclude each other: an unlogged write becomes durable at the next flush");
  return PAR_OK;
}

int region_check_writer(par_region *r) {
  if (r->repl_role != PAR_REPL_BACKUP_SEND_INDEX) return PAR_OK;
  return par_error(PAR_EINVAL, "region '%s' is a send-index backup: it takes shipped records only "
                   "(par_repl_apply) until it is promoted", r->name);
}

int region_apply(par_region *r, const wal_op *ops, uint32_t n, unsigned flags) {
  return region_apply_at(r, ops, n, flags, 0);
}

/* A writer that finds write_mu taken spins a while before it sleeps on the
 * mutex. The lock is held for a few microseconds per write (WAL append, L0
 * link), and a writer asleep on it costs the holder a futex wake at unlock
 * (on a VM, an inter-processor interrupt) and itself a reschedule: with two
 * writers that hand-off took 8-10% of Load A's samples. glibc's adaptive
 * mutex spins too briefly to help, and a spinner that retries the lock
 * itself (a compare-and-swap on the holder's cache line) helped less than
 * one that polls write_held, which holders taking the lock here set.
 *
 * How long to spin adapts, per region, between WRITE_SPIN_MIN_NS and
 * WRITE_SPIN_MAX_NS: doubled when a spin got the lock, halved when it gave
 * up. Under a memory limit a holder can stay long (a fault that reclaims, a
 * buffer written in its place), and a fixed 100 us spin then cost Run A 12%
 * of its throughput while it made Load A 19-31% faster (docs/benchmarks.md,
 * "Writers spin for write_mu"). One writer spins at a time; the others
 * sleep at once, so that on a small machine spinners never take the cores
 * from the holder and the background threads. */
static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Spins up to r->write_spin_ns for write_mu (one spinner per region);
 * 1 with the lock taken, and the bound adapted to how it went. */
static int spin_for_writes(par_region *r) {
  uint32_t bound = atomic_load_explicit(&r->write_spin_ns, memory_order_relaxed);
  assert(bound >= WRITE_SPIN_MIN_NS && bound <= WRITE_SPIN_MAX_NS);
  uint64_t deadline = clock_mono_ns() + bound;
  for (uint32_t i = 1;; i++) {
    cpu_relax();
    if (!atomic_load_explicit(&r->write_held, memory_order_relaxed) && !pthread_mutex_trylock(&r->write_mu)) {
      bound = bound * 2 < WRITE_SPIN_MAX_NS ? bound * 2 : WRITE_SPIN_MAX_NS;
      atomic_store_explicit(&r->write_spin_ns, bound, memory_order_relaxed);
      return 1;
    }
    if (i % 16 == 0 && clock_mono_ns() > deadline) {
      bound = bound / 2 > WRITE_SPIN_MIN_NS ? bound / 2 : WRITE_SPIN_MIN_NS;
      atomic_store_explicit(&r->write_spin_ns, bound, memory_order_relaxed);
      return 0;
    }
  }
}

static void lock_writes(par_region *r) {
  if (pthread_mutex_trylock(&r->write_mu)) {
    int spun = atomic_fetch_add(&r->write_spinners, 1) == 0 && spin_for_writes(r);
    atomic_fetch_sub(&r->write_spinners, 1);
    if (!spun) pthread_mutex_lock(&r->write_mu);
  }
  atomic_store_explicit(&r->write_held, 1, memory_order_relaxed);
}

static void unlock_writes(par_region *r) {
  atomic_store_explicit(&r->write_held, 0, memory_order_relaxed);
  pthread_mutex_unlock(&r->write_mu);
}

/* want_lsn 0: the next LSN, whatever it is. */
int region_apply_at(par_region *r, const wal_op *ops, uint32_t n, unsigned flags, uint64_t want_lsn) {
  int rc = region_check_flags(flags);
  if (rc) return rc;
  memtable *m;
  budget_admit(r->vol);
  if (!want_lsn) gc_admit(r);
  /* Never wait for a compaction holding write_mu: GC needs it to finish. */
  for (;;) {
    lock_writes(r);
    if (r->write_failed) {
      unlock_writes(r);
      return par_error(PAR_EFAILED, "an earlier write is logged but missed L0 (%s): reopen the region",
                       par_strerror(r->write_failed));
    }
    if (!want_lsn && (rc = region_check_writer(r))) {
      unlock_writes(r);
      return rc;
    }
    m = region_make_room(r, &rc);
    if (m || rc != PAR_EBUSY) break;
    unlock_writes(r);
    if ((rc = region_wait_room(r))) return rc;
  }
  uint64_t lsn = r->next_lsn;
  /* A backup applies what its primary accepted: the primary keeps the budget. */
  if (m && !want_lsn) rc = region_check_range_room(r, ops, n);
  if (rc) m = NULL;
  if (m && want_lsn && want_lsn != lsn) {
    rc = par_error(PAR_EINVAL, "record LSN %llu is not the region's next LSN %llu",
                   (unsigned long long)want_lsn, (unsigned long long)lsn);
    m = NULL;
  }
  if (m) rc = region_log_and_insert(r, m, lsn, ops, n, flags & PAR_NO_WAL, NULL, NULL);
  int froze = 0;
  if (failed_for_room(rc)) {
    /* Which values died is known only once a merge has compared versions:
     * a full volume (or a region description at its size limit) flushes L0
     * so that merges and GC can give space back (the caller's retry then
     * finds it). */
    pthread_mutex_lock(&r->view_mu);
    if (!r->view->frozen && r->view->active->entries) froze = region_freeze(r) == PAR_OK;
    pthread_mutex_unlock(&r->view_mu);
  }
  unlock_writes(r);
  /* A large-log buffer this write filled is written by the WAL thread
   * (region.c, write_sealed_large) while this writer and the next append;
   * until then reads find its records in the buffer. */
  if (vlog_has_sealed(&r->hot)) wal_kick(&r->wal);
  if (froze) compaction_schedule(r);
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

/* ---- GC's write (api/region.h) ---- */

int region_relocate(par_region *r, const vlog_record *rec, relocate_check_fn check, void *arg,
                    uint64_t *relocated) {
  *relocated = 0;
  /* Not lock_writes: a compaction worker spinning for write_mu would take
   * a core from the writers it waits for. */
  pthread_mutex_lock(&r->write_mu);
  uint64_t view_lsn;
  view *w = region_acquire_view(r, &view_lsn);
  int live = 0;
  int rc = check(arg, r, w, view_lsn, &live);
  view_unref(w);
  if (!rc && live && r->write_failed) rc = par_error(PAR_EFAILED, "the region refuses writes until a reopen");
  /* A collection picked while the region was a primary may reach here
   * after it became a backup (par_repl_set_role): a relocation would then
   * take an LSN that the primary's shipped records use. The segment waits. */
  if (!rc && live && r->repl_role != PAR_REPL_PRIMARY)
    rc = par_error(PAR_EBUSY, "region '%s' is a backup now: GC relocates on primaries only", r->name);
  if (!rc && live) {
    memtable *m = region_make_room(r, &rc); /* PAR_EBUSY: never stall a compaction worker */
    uint64_t lsn = r->next_lsn;
    vptr np;
    if (m) rc = vlog_append(&r->cold, lsn, 0, rec->key, rec->key_len, rec->value, rec->value_len, &np);
    uint8_t enc[VPTR_SIZE];
    if (m && !rc) {
      vptr_encode(enc, np);
      wal_op op = {WAL_PUT_LARGE, rec->key_len, VPTR_SIZE, rec->key, enc};
      /* As a user write (region_log_and_insert): the entry first, then the
       * record, whose LSN is spent once written. */
      mt_entry *me = memtable_entry(m, lsn, WAL_PUT_LARGE, rec->key, rec->key_len, enc, VPTR_SIZE);
      rc = me ? wal_append(&r->wal, lsn, &op, 1) : PAR_ENOMEM;
      if (!rc) {
        r->next_lsn = lsn + 1;
        if ((rc = memtable_link(m, me))) r->write_failed = rc;
      }
      if (!rc) {
        atomic_store(&r->last_lsn, lsn);
        *relocated = lsn;
      }
    }
  }
  pthread_mutex_unlock(&r->write_mu);
  if (!rc) rc = vlog_write_sealed(&r->cold); /* a buffer this relocation filled */
  return rc;
}

uint64_t region_last_given_lsn(par_region *r) {
  pthread_mutex_lock(&r->write_mu);
  uint64_t given = r->next_lsn - 1;
  pthread_mutex_unlock(&r->write_mu);
  return given;
}

int region_unlogged_in_l0(par_region *r) {
  uint64_t unlogged = atomic_load(&r->unlogged_lsn);
  if (!unlogged) return 0;
  pthread_mutex_lock(&r->vol->meta_mu);
  const region_desc *d = catalog_find_id(&r->vol->cat, r->id);
  int pending = !d || unlogged > d->covered_lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  return pending;
}

PAR_API int par_put(par_region *r, const void *key, size_t key_len, const void *value,
                    size_t value_len, unsigned flags) {
  if (!r) return par_error(PAR_EINVAL, "par_put: NULL region");
  int rc = region_check_key(key, key_len);
  if (!rc) rc = region_check_value(value, value_len);
  if (rc) return rc;
  wal_op op = {WAL_PUT, (uint16_t)key_len, (uint32_t)value_len, key, value};
  return region_apply(r, &op, 1, flags);
}

PAR_API int par_delete(par_region *r, const void *key, size_t key_len, unsigned flags) {
  if (!r) return par_error(PAR_EINVAL, "par_delete: NULL region");
  int rc = region_check_key(key, key_len);
  if (rc) return rc;
  wal_op op = {WAL_DELETE, (uint16_t)key_len, 0, key, NULL};
  return region_apply(r, &op, 1, flags);
}

int region_check_range(const void *begin, size_t begin_len, const void *end, size_t end_len) {
  int rc = region_check_key(begin, begin_len);
  if (!rc) rc = region_check_key(end, end_len);
  if (!rc && key_cmp(begin, begin_len, end, end_len) > 0)
    rc = par_error(PAR_EINVAL, "range to delete begins after its end");
  return rc;
}

/* Bytes of the range tombstones a region description would hold if every
 * tombstone of w reached the device levels unmerged. */
static size_t range_tomb_bytes(const view *w) {
  size_t n = 0;
  memtable *mts[2] = {w->active, w->frozen};
  for (int i = 0; i < 2; i++) {
    if (!mts[i]) continue;
    pthread_rwlock_rdlock(&mts[i]->lock);
    for (uint32_t k = 0; k < mts[i]->nrtombs; k++) n += 4u + mts[i]->rtombs[k]->key_len + mts[i]->rtombs[k]->value_len;
    pthread_rwlock_unlock(&mts[i]->lock);
  }
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (w->tree[i][j]) n += range_set_encoded_size(&w->tree[i][j]->d.rtombs);
  return n;
}

int region_check_range_room(par_region *r, const wal_op *ops, uint32_t n) {
  size_t add = 0;
  for (uint32_t i = 0; i < n; i++)
    if (ops[i].type == WAL_DELETE_RANGE) add += 4u + ops[i].key_len + ops[i].value_len;
  if (!add) return PAR_OK;
  uint64_t lsn;
  view *w = region_acquire_view(r, &lsn);
  size_t have = range_tomb_bytes(w);
  view_unref(w);
  if (have + add > PAR_MAX_RANGE_TOMBSTONE_BYTES)
    return par_error(PAR_ELIMIT, "region '%s' holds %zu bytes of range tombstones, the limit is %u: "
                                 "par_compact drops them (they leave at the last level)",
                     r->name, have, PAR_MAX_RANGE_TOMBSTONE_BYTES);
  return PAR_OK;
}

PAR_API int par_delete_range(par_region *r, const void *begin, size_t begin_len, const void *end, size_t end_len,
                             unsigned flags) {
  if (!r) return par_error(PAR_EINVAL, "par_delete_range: NULL region");
  int rc = region_check_range(begin, begin_len, end, end_len);
  if (rc) return rc;
  wal_op op = {WAL_DELETE_RANGE, (uint16_t)begin_len, (uint32_t)end_len, begin, end};
  return region_apply(r, &op, 1, flags);
}

PAR_API int par_sync(par_region *r) {
  if (!r) return par_error(PAR_EINVAL, "par_sync: NULL region");
  return wal_sync(&r->wal, atomic_load(&r->last_lsn));
}
