/* Compaction: merges a frozen L0 into L1 ("flush") and a level Li into
 * Li+1 ("spill"), building the new tree bottom-up (Parallax §3, Kreon §3.4).
 *
 * A level has an active tree, which merges from above land in, and while it
 * spills, a second, older tree that is read by the spill. So a flush into
 * L1 can run while L1 spills into L2, and writers stall only when a frozen
 * L0 has to wait for the previous one.
 *
 * Every finished merge records the level layout in the redo log and then
 * publishes it as a new view. The record is written under view_mu (then
 * meta_mu) and synced with view_mu released, so that a writer freezing a
 * full L0 meanwhile does not wait on the fdatasync; commit_mu keeps the
 * region's commits in order. The start of a spill (a tree moving to its
 * level's spilling slot) is published without a record: the catalog may
 * hold the tree in the active slot, where recovery spills it again. So the
 * layout in the catalog is a layout some view had, up to such moves. The
 * replaced trees free their segments when the last reader lets go of them,
 * after the record is durable. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "compaction/compaction.h"

#include "api/region.h"
#include "api/view.h"
#include "gc/gc.h"
#include "index/builder.h"
#include "io/mapguard.h"
#include "log/sorted_run.h"
#include "parallax/replication.h"
#include "scan/merge.h"
#include "scan/rangedel.h"
#include "util/sorted_u32.h"
#include "util/status.h"

enum { TASK_NONE, TASK_FLUSH, TASK_SPILL, TASK_GC };

static compaction_state *comp(par_region *r) { return region_compaction(r); }

/* A close does not wait for a spill in its first half: the spill stops
 * between two entries and gives its new tree back. Nothing was recorded,
 * so its sources stay as they were and the next open runs it again
 * (LevelDB and RocksDB stop their compactions at close too). A spill
 * rewrites the level below, gigabytes where a flush rewrites L1 at most.
 * A close still waits for a flush, which bounds the WAL a reopen replays;
 * for a spill past half its entries, which costs less to finish than to
 * redo; and for a spill whose source is over twice its level's capacity,
 * one that sessions shorter than a spill kept stopping. Not an error: the
 * region does not fail. */
enum { MERGE_CANCELLED = 1 };

typedef struct task {
  int kind;
  int dst;              /* destination level */
  memtable *frozen;     /* flush source       */
  dtree *src;           /* spill source       */
  dtree *dst_tree;      /* may be NULL        */
  int drop_tombstones;
  int inline_medium;    /* the merge level: medium values go into the leaves */
  garbage_list garbage; /* large-log records the merge found dead, or copied */
  int sort_large;       /* a merge into the last level: copy the upper
                           source's large values into a sorted run */
  int stoppable;        /* a close stops it in its first half (MERGE_CANCELLED) */
  sorted_run sorted;
  gc_task gc;
} task;

/* A merge drops an entry that a newer one shadows: a large value's record
 * becomes garbage in its segment. */
static void count_shadowed(void *arg, const tree_entry *e) {
  task *t = arg;
  if (e->cat == CAT_LARGE && e->value_len == VPTR_SIZE) garbage_add(&t->garbage, vptr_decode(e->value));
}

static uint64_t level_capacity(uint64_t l0_size, uint32_t growth, int level) {
  uint64_t c = l0_size;
  for (int i = 0; i < level; i++) c = c > UINT64_MAX / growth ? UINT64_MAX : c * growth;
  return c;
}

static uint64_t capacity(const par_region *r, int level) {
  const par_options *o = region_options(r);
  return level_capacity(o->l0_size, o->growth_factor, level);
}

/* A level's size when it spills: its nodes plus the medium values its
 * pointers refer to (Parallax §3.3 keeps both sizes). */
static uint64_t full_size(const dtree *t) { return t->d.bytes + t->d.medium_bytes; }

/* Whether a level's active tree should spill into the next level. */
static int should_spill(par_region *r, const view *w, int i) {
  if (!w->tree[i][0]) return 0;
  if (full_size(w->tree[i][0]) > capacity(r, i)) return 1;
  if (!comp(r)->compact_all) return 0;
  for (int j = i + 1; j <= PAR_MAX_LEVELS; j++) /* par_compact: down to the last level */
    if (w->tree[j][0] || w->tree[j][1]) return 1;
  return 0;
}

/* Whether a waiting spill goes before a flush: some level i's old tree
 * waits to spill (tree[i][1], its destination free) while the tree that
 * took the level's merges since is over the level's capacity too. */
static int spill_overdue(const view *w, const int *dest_busy, uint64_t l0_size, uint32_t growth) {
  for (int i = 1; i < PAR_MAX_LEVELS; i++)
    if (w->tree[i][1] && !dest_busy[i + 1] && w->tree[i][0] &&
        full_size(w->tree[i][0]) > level_capacity(l0_size, growth, i))
      return 1;
  return 0;
}

int compaction_next_merge(const view *w, const int *dest_busy, uint64_t l0_size, uint32_t growth) {
  if (w->frozen && !dest_busy[1] && !spill_overdue(w, dest_busy, l0_size, growth)) return 1;
  for (int i = 1; i < PAR_MAX_LEVELS; i++)
    if (w->tree[i][1] && !dest_busy[i + 1]) return i + 1;
  return 0;
}

/* Nothing older than level dst's active tree holds data. */
static int is_last(const view *w, int dst) {
  if (w->tree[dst][1]) return 0;
  for (int i = dst + 1; i <= PAR_MAX_LEVELS; i++)
    if (w->tree[i][0] || w->tree[i][1]) return 0;
  return 1;
}

typedef struct layout_edit {
  par_region *r;
  const view *w;
  uint64_t covered; /* 0: unchanged */
  seg_list wal_freed;
  const garbage_list *garbage; /* may be NULL */
  const sorted_run *sorted;    /* may be NULL */
} layout_edit;

static int medium_seg_in_view(const view *w, uint32_t seg) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      for (uint32_t k = 0; w->tree[i][j] && k < w->tree[i][j]->d.msegs.n; k++)
        if (w->tree[i][j]->d.msegs.v[k] == seg) return 1;
  return 0;
}

static int root_in_view(const view *w, uint32_t root) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (w->tree[i][j] && w->tree[i][j]->d.root == root) return 1;
  return 0;
}

/* Rewrites the description's levels from the view; trims covered WAL. A
 * tree the view holds in another slot (a spill started since the last
 * record) keeps its segments. */
static int edit_layout(region_desc *d, void *arg, seg_list *freed) {
  layout_edit *e = arg;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      tree_desc *t = &d->level[i][j];
      const dtree *nt = e->w->tree[i][j];
      if (t->root && !root_in_view(e->w, t->root)) {
        for (uint32_t k = 0; k < t->segs.n; k++)
          if (seg_list_push(freed, t->segs.v[k])) return PAR_ENOMEM;
        for (uint32_t k = 0; k < t->msegs.n; k++)
          if (!medium_seg_in_view(e->w, t->msegs.v[k]) && seg_list_push(freed, t->msegs.v[k])) return PAR_ENOMEM;
      }
      tree_desc_free(t);
      if (nt && tree_desc_copy(t, &nt->d)) return PAR_ENOMEM;
    }
  if (e->covered > d->covered_lsn) {
    d->covered_lsn = e->covered;
    uint32_t drop = region_wal_trimmable(e->r, d, e->covered, 0);
    for (uint32_t i = 0; i < drop; i++)
      if (seg_list_push(freed, d->wal[i].seg) || seg_list_push(&e->wal_freed, d->wal[i].seg))
        return PAR_ENOMEM;
    if (drop) memmove(d->wal, d->wal + drop, (d->nwal - drop) * sizeof *d->wal); /* d->wal may be NULL */
    d->nwal -= drop;
  }
  /* A run's segments, closed: the unused tail of each is garbage. */
  for (uint32_t i = 0; e->sorted && i < e->sorted->nsegs; i++) {
    const sorted_run_seg *s = &e->sorted->segs[i];
    assert(!region_desc_find_vlog(d, s->inc)); /* incarnations are unique: */
    assert(s->inc <= d->inc_reserved);           /* taken within the reservation */
    if (s->inc > d->next_inc) d->next_inc = s->inc;
    int rc = region_desc_add_vlog(d, (vlog_seg){.seg = s->seg, .inc = s->inc, .garbage = PAR_SEGMENT_SIZE - s->used, .nsegs = 1});
    if (rc) return rc;
  }
  if (e->garbage) garbage_apply(e->garbage, d);
  return PAR_OK;
}

static int in_view(const view *w, const dtree *t) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (w->tree[i][j] == t) return 1;
  return 0;
}

/* Publishes w as the region's view (view_mu held; the reference to w moves
 * to the region). Trees that w no longer holds are retired. */
static void publish(par_region *r, view *w) {
  view *old = region_view(r);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (old->tree[i][j] && !in_view(w, old->tree[i][j])) dtree_retire(old->tree[i][j]);
  region_set_view(r, w);
  gc_merge_published(region_gc(r));
  region_views_wake(r);
}

/* Picks a segment to collect (view_mu held); 1 if t is a GC task. */
static int pick_gc(par_region *r, task *t) {
  if (gc_is_stalled(region_gc(r)) || !gc_pick(r, &t->gc, 0)) return 0;
  t->kind = TASK_GC;
  comp(r)->running++;
  return 1;
}

/* Moves the tree of each level over its capacity, whose spilling slot is
 * free and which no merge writes into, to that slot (view_mu held): a new
 * tree takes the level's merges from then on, whether or not a worker is
 * free to run the spill yet. */
static int start_spills(par_region *r) {
  for (int i = 1; i < PAR_MAX_LEVELS; i++) {
    view *w = region_view(r);
    if (w->tree[i][1] || comp(r)->dest_busy[i] || !should_spill(r, w, i)) continue;
    view *n = view_clone(w);
    if (!n) return PAR_ENOMEM;
    n->tree[i][1] = n->tree[i][0];
    n->tree[i][0] = NULL;
    publish(r, n);
  }
  return PAR_OK;
}

/* Picks the next merge, starting spills of overfull levels (view_mu held).
 * A volume out of space still collects garbage: that is how space comes
 * back (Parallax runs GC when space runs short), and short of space GC goes
 * before merges, which sustained writes would otherwise keep first. */
static int pick(par_region *r, task *t) {
  const par_options *o = region_options(r);
  int failed = region_failure(r);
  memset(t, 0, sizeof *t);
  if (region_is_closing(r) || (failed && !failed_for_room(failed)) || region_role(r) == PAR_REPL_BACKUP_SEND_INDEX)
    return PAR_OK;
  /* A GC relocation takes an LSN: the primary's to give, so backups never collect. */
  if (region_is_primary(r) && (failed || segalloc_room(region_alloc(r)) < SEGALLOC_RESERVE) &&
      pick_gc(r, t))
    return PAR_OK;
  if (failed) return PAR_OK;
  /* Spills start (their trees move aside) even while flushes go first, so a
   * flush never merges into a level over its capacity; and a spill that
   * waited until the level's new tree is over capacity too goes before the
   * next flush. Before, a flush always went first: under writes faster than
   * the flushes, one worker flushed L0 after L0 into an L1 that never
   * spilled, each flush rewriting more of it (SD, 20 M under 1 GiB: 19.2 GB
   * of merge writes in Load A, against 6.2-8.6 GB when L1 spilled). */
  int rc = start_spills(r);
  if (rc) return rc;
  view *w = region_view(r);
  int dst = compaction_next_merge(w, comp(r)->dest_busy, o->l0_size, o->growth_factor);
  /* Writers wait while GC owes too much (gc/gc.h): collect before spilling. */
  if (region_is_primary(r)) {
    gc_note_owed(r);
    if (dst != 1 && gc_over_debt(region_gc(r), gc_owed(region_gc(r))) && pick_gc(r, t)) return PAR_OK;
  }
  if (dst == 1) {
    t->kind = TASK_FLUSH;
    t->frozen = w->frozen;
    memtable_ref(t->frozen);
  } else if (dst) {
    t->kind = TASK_SPILL;
    t->src = w->tree[dst - 1][1];
    dtree_ref(t->src);
  }
  t->dst = dst;
  if (!t->kind && !region_is_primary(r)) return PAR_OK; /* a relocation takes an LSN: the primary's to give */
  if (!t->kind) {
    pick_gc(r, t); /* no merge to run: collect */
    return PAR_OK;
  }
  t->dst_tree = w->tree[t->dst][0];
  if (t->dst_tree) dtree_ref(t->dst_tree);
  t->stoppable = t->kind == TASK_SPILL && full_size(t->src) <= 2 * capacity(r, t->dst - 1);
  t->drop_tombstones = is_last(w, t->dst);
  t->sort_large = t->drop_tombstones && o->sort_large_values && o->placement == PAR_PLACEMENT_HYBRID;
  t->inline_medium = o->placement != PAR_PLACEMENT_HYBRID || t->drop_tombstones ||
                     (o->medium_merge_level == 1 && t->dst < PAR_MAX_LEVELS && is_last(w, t->dst + 1));
  assert(!comp(r)->dest_busy[t->dst]); /* compaction_next_merge skips busy levels */
  comp(r)->dest_busy[t->dst] = 1;
  comp(r)->running++;
  return PAR_OK;
}

static void task_release(task *t) {
  memtable_unref(t->frozen);
  dtree_unref(t->src);
  dtree_unref(t->dst_tree);
  garbage_free(&t->garbage);
  sorted_run_free(&t->sorted);
}

/* The merge proper: every entry of the sources, in order, into the
 * builder. Guarded (io/mapguard.h): medium keys and values are read
 * through the map. A value copied out of a tail buffer is in owned until
 * the builder took it. */
typedef struct merge_run {
  par_region *r;
  task *t;
  tree_builder *b;
  merge_iter m;
  vlog_readahead ra;
  uint8_t *owned;
  uint64_t class_bytes[3];
  const uint32_t *copyable; /* sorted: the segments whose records a copy may read (gc.h) */
  uint32_t ncopyable;
  uint64_t entries, done;   /* the sources' entries, and those merged so far */
} merge_run;

/* Whether the merge stops now: a stoppable spill in its first half while
 * the region closes (closing is written under view_mu, read here without). */
static int stop_now(const merge_run *mr) {
  return mr->t->stoppable && mr->done < mr->entries / 2 && region_is_closing(mr->r);
}

/* Adds a large entry of the upper level to the builder pointing at a copy
 * of its record in the task's sorted run; the old record becomes garbage.
 * A record the run cannot take (no room, a damaged record: its readers
 * will report it) keeps its pointer. */
static int add_sorted_copy(merge_run *mr, tree_entry *e) {
  vptr p = vptr_decode(e->value);
  vlog_record rec;
  vptr np;
  int rc = sorted_u32_contains(mr->copyable, mr->ncopyable, p.inc)
               ? vlog_read_mapped(region_file(mr->r), region_id(mr->r), p, &rec)
               : PAR_NOT_FOUND;
  if (!rc && (rec.key_len != e->key_len || memcmp(rec.key, e->key, e->key_len) != 0)) rc = PAR_ECORRUPT;
  if (!rc) rc = sorted_run_append(&mr->t->sorted, &rec, &np);
  if (rc == PAR_NOT_FOUND || rc == PAR_ECORRUPT || rc == PAR_ENOSPC || rc == PAR_ELIMIT)
    return builder_add_entry(mr->b, e);
  if (rc) return rc;
  garbage_add(&mr->t->garbage, p);
  uint8_t enc[VPTR_SIZE];
  vptr_encode(enc, np);
  tree_entry copy = *e;
  copy.value = enc;
  return builder_add_entry(mr->b, &copy);
}

static int merge_entries(void *arg) {
  merge_run *mr = arg;
  par_region *r = mr->r;
  task *t = mr->t;
  merge_iter *m = &mr->m;
  const par_options *o = region_options(r);
  int rc = merge_settle(m);
  while (!rc && m->cur >= 0) {
    if (stop_now(mr)) return MERGE_CANCELLED;
    mr->done++;
    tree_entry *e = merge_entry(m);
    size_t pair = (size_t)entry_key_len(e) + e->value_len;
    if (t->drop_tombstones && e->cat == CAT_TOMBSTONE) {
      /* gone for good */
    } else if (t->frozen && m->cur == 0 && e->cat == CAT_INLINE && !t->inline_medium &&
               pair >= o->small_threshold && pair < o->large_threshold) {
      /* A medium pair leaves L0: its value goes to the transient log, sorted. */
      rc = builder_add_medium(mr->b, region_id(r), e->key, e->key_len, e->value, e->value_len);
      mr->class_bytes[1] += leaf_entry_size(entry_stored_len(CAT_MEDIUM, e->key_len), e->key_len, VPTR_SIZE);
    } else if (e->cat == CAT_MEDIUM && t->inline_medium) {
      /* The merge level: the value and the whole key move into the leaf. */
      const uint8_t *val;
      uint32_t vl;
      if (e->value_len == VPTR_SIZE) vlog_readahead_note(&mr->ra, region_file(r), vptr_decode(e->value));
      rc = entry_resolve_key(e);
      if (!rc) rc = region_read_large(r, e, &val, &vl, &mr->owned);
      if (!rc) rc = builder_add(mr->b, CAT_INLINE, e->key, e->key_len, val, vl);
      if (!rc) mr->class_bytes[1] += leaf_entry_size(e->key_len, e->key_len, vl);
      free(mr->owned);
      mr->owned = NULL;
    } else {
      uint16_t kl = entry_key_len(e), stored = entry_stored_len(e->cat, kl);
      int cls = e->cat == CAT_LARGE ? 2 : e->cat == CAT_MEDIUM ? 1 : e->cat == CAT_TOMBSTONE ? 0
                : pair < o->small_threshold ? 0 : pair < o->large_threshold ? 1 : 2;
      mr->class_bytes[cls] += leaf_entry_size(stored, kl, e->value_len);
      if (t->sort_large && m->cur == 0 && e->cat == CAT_LARGE && e->value_len == VPTR_SIZE)
        rc = add_sorted_copy(mr, e);
      else
        rc = builder_add_entry(mr->b, e);
    }
    if (!rc) rc = merge_next(m);
  }
  return rc;
}

/* Merges the task's sources into a new tree. */
static int merge(par_region *r, task *t, dtree **out) {
  kv_source *src[2] = {0};
  int n = 0, rc = PAR_OK;
  /* A flushed L0 may point at large-log records still in a tail buffer:
   * they must be durable before the tree that refers to them is committed
   * (the WAL thread writes those buffers before each WAL write), and in the
   * file before a sorted run copies them. During recovery they already are. */
  if (t->frozen && region_is_logging(r)) rc = region_sync_log(r, t->frozen->max_lsn);
  if (rc) return rc;
  if (t->frozen) {
    src[n] = memtable_source(t->frozen, UINT64_MAX, count_shadowed, t);
    rc = src[n] ? src[n]->seek(src[n], NULL, 0, 0) : par_error(PAR_ENOMEM, "compaction source");
  } else {
    rc = tree_stream_source(region_file(r), region_keys(r), &t->src->d, &src[n]);
  }
  n++;
  if (!rc && t->dst_tree) rc = tree_stream_source(region_file(r), region_keys(r), &t->dst_tree->d, &src[n++]);
  /* Range tombstones: the sources' hide what they cover in older sources
   * (dropped here), and the new tree keeps them all for the levels below,
   * unless it is the last level. */
  rdel rd = {0};
  if (!rc && t->frozen) rc = rdel_add_memtable(&rd, t->frozen, UINT64_MAX);
  else if (!rc) rdel_add_tree(&rd, &t->src->d.rtombs);
  if (!rc && t->dst_tree) rdel_add_tree(&rd, &t->dst_tree->d.rtombs);
  range_set rtombs = {0};
  if (!rc && !t->drop_tombstones) rc = rdel_union(&rd, &rtombs);
  tree_builder b;
  int building = 0;
  if (!rc) rc = builder_init(&b, region_file(r), region_alloc(r));
  building = !rc;
  if (building) b.direct = region_logs_shipped(r);
  merge_run mr = {.r = r, .t = t, .b = &b,
                  .m = {.src = src, .n = n, .cur = -1, .shadowed = count_shadowed, .shadowed_arg = t, .rd = &rd},
                  .entries = (t->src ? t->src->d.entries : 0) + (t->dst_tree ? t->dst_tree->d.entries : 0)};
  /* Copying values: a view of the merge's own keeps the records it may
   * read from being freed under it (gc.h). */
  view *pin = NULL;
  uint32_t *copyable = NULL;
  if (!rc && t->sort_large) {
    sorted_run_init(&t->sorted, region_file(r), region_alloc(r), region_id(r), region_take_sorted, r);
    pin = view_create(r);
    rc = pin ? gc_copyable_segments(r, &copyable, &mr.ncopyable) : par_error(PAR_ENOMEM, "view");
    mr.copyable = copyable;
  }
  if (!rc) rc = mapguard_run(merge_entries, &mr);
  if (!rc && t->sort_large) rc = sorted_run_finish(&t->sorted);
  view_unref(pin);
  free(copyable);
  free(mr.owned);
  for (int i = 0; i < n; i++) {
    if (!src[i]) continue;
    /* Source 0 is the upper level (a memtable reads nothing), source 1 the destination. */
    int level = i == 0 ? t->dst - 1 : t->dst;
    atomic_fetch_add(&comp(r)->stats.level[level].read, src[i]->bytes_read);
    src[i]->close(src[i]);
  }
  rdel_free(&rd);
  tree_desc d;
  if (!rc) {
    building = 0;
    rc = builder_finish(&b, &d);
  }
  if (building) builder_abort(&b);
  if (rc) {
    range_set_free(&rtombs);
    return rc;
  }
  d.rtombs = rtombs; /* a tree of range tombstones alone has root 0 */
  atomic_fetch_add(&comp(r)->stats.level[t->dst].written, d.bytes);
  for (int i = 0; i < 3; i++) atomic_fetch_add(&comp(r)->stats.level[t->dst].class_bytes[i], mr.class_bytes[i]);
  *out = NULL;
  if (!tree_desc_present(&d)) return PAR_OK;
  /* The tree's medium sets: the one this flush wrote, and, above the merge
   * level, those of both sources, whose pointers it carries on. */
  const dtree *from[2] = {t->src, t->dst_tree};
  uint32_t cap = 1;
  for (int i = 0; i < 2 && !t->inline_medium; i++) cap += from[i] ? from[i]->nsets : 0;
  mseg_set **sets = malloc(cap * sizeof *sets);
  uint32_t nsets = 0;
  if (!sets) rc = par_error(PAR_ENOMEM, "medium-log sets");
  if (!rc && d.msegs.n) {
    atomic_fetch_add(&comp(r)->stats.medium_written, (uint64_t)d.msegs.n * PAR_SEGMENT_SIZE);
    seg_list own;
    rc = seg_list_copy(&own, &d.msegs);
    sets[nsets] = rc ? NULL : mseg_set_create(region_alloc(r), &own);
    if (!sets[nsets]) {
      seg_list_free(&own);
      rc = par_error(PAR_ENOMEM, "medium-log set");
    } else {
      nsets++;
    }
  }
  for (int i = 0; i < 2 && !rc && !t->inline_medium; i++)
    for (uint32_t k = 0; from[i] && k < from[i]->nsets && !rc; k++) {
      mseg_set *ms = from[i]->sets[k];
      for (uint32_t j = 0; j < ms->segs.n && !rc; j++) rc = seg_list_push(&d.msegs, ms->segs.v[j]);
      if (!rc) {
        mseg_set_ref(ms);
        sets[nsets++] = ms;
      }
    }
  if (!rc) *out = dtree_create_shared(region_alloc(r), &d, sets, nsets);
  if (!rc && !*out) rc = par_error(PAR_ENOMEM, "tree handle");
  if (!rc && t->sorted.nsegs) atomic_fetch_add(&comp(r)->stats.large_sorted, t->sorted.bytes);
  if (rc) {
    for (uint32_t i = 0; i < d.segs.n; i++) segalloc_free(region_alloc(r), d.segs.v[i]);
    /* the set this flush wrote frees its own segments; inherited ones are
     * only unreferenced (their trees still use them) */
    for (uint32_t i = 0; i < nsets; i++) mseg_set_unref(sets[i]);
    if (!nsets) for (uint32_t i = 0; i < d.msegs.n; i++) segalloc_free(region_alloc(r), d.msegs.v[i]);
    tree_desc_free(&d);
  }
  free(sets);
  return rc;
}

/* The region's current view with the merged tree in place of the merge's
 * sources (view_mu held). Only this task changes those slots while it runs:
 * its destination is busy, and its source is the frozen L0 or a spilling
 * tree; a freeze or another level's spill start may change the rest. */
static view *merged_view(par_region *r, const task *t, dtree *nt) {
  view *n = view_clone(region_view(r));
  if (!n) return NULL;
  if (t->kind == TASK_FLUSH) {
    assert(n->frozen == t->frozen);
    memtable_unref(n->frozen);
    n->frozen = NULL;
  } else {
    assert(n->tree[t->dst - 1][1] == t->src);
    dtree_unref(n->tree[t->dst - 1][1]);
    n->tree[t->dst - 1][1] = NULL;
  }
  dtree_unref(n->tree[t->dst][0]);
  n->tree[t->dst][0] = nt;
  if (nt) dtree_ref(nt);
  return n;
}

/* Installs the merged tree: its layout recorded under view_mu, synced
 * without it, then published. Covered WAL segments no log cursor needs are
 * freed once the record is durable (only recovery and cursors read them).
 * *recorded: the record was written, so the catalog may hold nt even if the
 * sync failed (the log is failed then: nt's segments must not be reused). */
static int commit(par_region *r, task *t, dtree *nt, int *recorded) {
  region_commit_lock(r);
  region_views_lock(r);
  view *n = merged_view(r, t, nt);
  int rc = n ? PAR_OK : par_error(PAR_ENOMEM, "view");
  layout_edit e = {r, n, t->kind == TASK_FLUSH ? t->frozen->max_lsn : 0, {0}, &t->garbage, &t->sorted};
  uint64_t ticket = 0;
  if (!rc) rc = region_persist_unsynced(r, edit_layout, &e, &ticket);
  *recorded = !rc;
  view_unref(n);
  region_views_unlock(r);
  if (!rc) rc = region_persist_sync(r, ticket);
  region_views_lock(r);
  if (!rc) {
    for (uint32_t i = 0; i < e.wal_freed.n; i++) segalloc_free(region_alloc(r), e.wal_freed.v[i]);
    /* Built again: a freeze or a spill start may have changed the view. */
    n = merged_view(r, t, nt);
    if (n) publish(r, n);
    else rc = par_error(PAR_ENOMEM, "view");
  }
  region_views_unlock(r);
  region_commit_unlock(r);
  seg_list_free(&e.wal_freed);
  return rc;
}

/* Runs a task. Its references go before it is counted as done, and after
 * a merge the space beyond the allocator's reserve goes back to the file
 * system, so that whoever waits for compactions sees the replaced trees'
 * space freed (a GC's space is freed, and trimmed, by gc_reclaim). */
static void run(par_region *r, task *t) {
  int rc;
  if (t->kind == TASK_GC) {
    rc = gc_run(r, &t->gc);
    task_release(t);
    region_views_lock(r);
    gc_run_done(region_gc(r), &t->gc, rc, region_failure(r));
  } else {
    dtree *nt = NULL;
    int recorded = 0;
    rc = merge(r, t, &nt);
    if (!rc) rc = commit(r, t, nt, &recorded);
    if (rc && nt && !recorded) dtree_retire(nt); /* never recorded: give its segments back */
    if (rc && !recorded) sorted_run_abort(&t->sorted);
    for (uint32_t i = 0; recorded && i < t->sorted.nsegs; i++) gc_note_settled(region_gc(r), t->sorted.segs[i].inc);
    dtree_unref(nt);                             /* a published view holds its own reference */
    task_release(t);
    region_trim(r);
    region_views_lock(r);
    if (!rc) atomic_fetch_add(&comp(r)->stats.merges, 1);
    else if (rc != MERGE_CANCELLED) region_set_failure(r, rc);
    assert(comp(r)->dest_busy[t->dst]); /* pick claimed it for this merge */
    comp(r)->dest_busy[t->dst] = 0;
  }
  assert(comp(r)->running > 0);
  comp(r)->running--;
  if (region_is_primary(r)) gc_note_owed(r); /* writers in gc_admit wait for it to drop */
  region_views_wake(r);
  region_views_unlock(r);
}

/* ---- workers ---- */

void compaction_schedule(par_region *r) {
  compaction_workers *q = region_workers(r);
  pthread_mutex_lock(&q->mu);
  if (!comp(r)->queued && !region_is_closing(r)) {
    /* A region is queued at most once and a volume has at most
     * PAR_MAX_REGIONS open, so the queue (sized at start) always has room:
     * scheduling never fails, which a stalled writer relies on. */
    assert(q->qlen < PAR_MAX_REGIONS);
    q->queue[q->qlen++] = r;
    comp(r)->queued = 1;
    pthread_cond_signal(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
}

static void *worker_main(void *arg) {
  compaction_workers *q = arg;
  pthread_mutex_lock(&q->mu);
  while (!q->stop) {
    if (!q->qlen) {
      pthread_cond_wait(&q->cv, &q->mu);
      continue;
    }
    par_region *r = q->queue[0];
    memmove(q->queue, q->queue + 1, --q->qlen * sizeof *q->queue);
    comp(r)->queued = 0;
    region_views_lock(r);
    comp(r)->inflight++;
    region_views_unlock(r);
    pthread_mutex_unlock(&q->mu);

    region_freeze_if_wanted(r);
    gc_reclaim(r);
    region_views_lock(r);
    task t;
    int rc = pick(r, &t);
    if (rc) region_set_failure(r, rc);
    region_views_unlock(r);
    if (t.kind) {
      compaction_schedule(r); /* another worker may take a disjoint merge */
      run(r, &t);
      compaction_schedule(r);
    }
    /* The last touch of r: region close waits for inflight to reach 0. */
    region_views_lock(r);
    assert(comp(r)->inflight > 0);
    comp(r)->inflight--;
    region_views_wake(r);
    region_views_unlock(r);
    pthread_mutex_lock(&q->mu);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

int compaction_start(compaction_workers *q, uint32_t threads) {
  memset(q, 0, sizeof *q);
  pthread_mutex_init(&q->mu, NULL);
  pthread_cond_init(&q->cv, NULL);
  q->n = threads ? threads : 1;
  q->threads = calloc(q->n, sizeof *q->threads);
  q->queue = calloc(PAR_MAX_REGIONS, sizeof *q->queue);
  if (!q->threads || !q->queue) {
    free(q->threads);
    free(q->queue);
    q->threads = NULL;
    q->queue = NULL;
    return par_error(PAR_ENOMEM, "compaction threads");
  }
  for (uint32_t i = 0; i < q->n; i++) {
    if (pthread_create(&q->threads[i], NULL, worker_main, q) != 0) {
      q->n = i;
      compaction_stop(q);
      return par_error(PAR_ENOMEM, "cannot start compaction threads");
    }
    pthread_setname_np(q->threads[i], "par-compaction"); /* for top -H and /proc/PID/task */
  }
  return PAR_OK;
}

void compaction_stop(compaction_workers *q) {
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  for (uint32_t i = 0; i < q->n; i++) pthread_join(q->threads[i], NULL);
  free(q->threads);
  free(q->queue);
  q->threads = NULL;
  q->queue = NULL;
  pthread_cond_destroy(&q->cv);
  pthread_mutex_destroy(&q->mu);
}

int compaction_pending(par_region *r) {
  const view *w = region_view(r);
  if (region_role(r) == PAR_REPL_BACKUP_SEND_INDEX) return 0;
  gc_task t;
  int failed = region_failure(r);
  if (failed_for_room(failed))
    return region_is_primary(r) && !gc_is_stalled(region_gc(r)) && (gc_pick(r, &t, 1) || gc_reclaimable(r));
  if (failed) return 0;
  if (w->frozen) return 1;
  for (int i = 1; i < PAR_MAX_LEVELS; i++)
    if (w->tree[i][1] || should_spill(r, w, i)) return 1;
  return region_is_primary(r) && (gc_pick(r, &t, 1) || gc_reclaimable(r));
}

uint64_t compaction_pending_bytes(const par_region *r, const view *w) {
  /* Walk down the levels carrying what the merge above would push into each
   * one: a level whose spill is under way, or that the push would take over
   * its capacity, owes a spill reading its trees and the next level's. */
  uint64_t pending = 0, incoming = w->frozen ? atomic_load(&w->frozen->bytes) : 0;
  if (incoming) pending += incoming + (w->tree[1][0] ? full_size(w->tree[1][0]) : 0);
  for (int i = 1; i < PAR_MAX_LEVELS; i++) {
    uint64_t active = w->tree[i][0] ? full_size(w->tree[i][0]) : 0;
    uint64_t out = w->tree[i][1] ? full_size(w->tree[i][1]) : 0;
    if (active + incoming > capacity(r, i)) out += active + incoming;
    if (out) pending += out + (w->tree[i + 1][0] ? full_size(w->tree[i + 1][0]) : 0);
    incoming = out;
  }
  return pending;
}

int compaction_busy(par_region *r) { return compaction_pending(r) || comp(r)->running; }

void compaction_set_all(par_region *r, int on) { comp(r)->compact_all = on; }

void compaction_begin_close(par_region *r) {
  compaction_workers *q = region_workers(r);
  pthread_mutex_lock(&q->mu);
  region_views_lock(r);
  region_mark_closing(r); /* a spill in its first half stops */
  region_views_unlock(r);
  pthread_mutex_unlock(&q->mu);
}

void compaction_drain(par_region *r) {
  compaction_workers *q = region_workers(r);
  pthread_mutex_lock(&q->mu);
  for (uint32_t i = 0; i < q->qlen; i++)
    if (q->queue[i] == r) {
      memmove(q->queue + i, q->queue + i + 1, (q->qlen - i - 1) * sizeof *q->queue);
      q->qlen--;
      break;
    }
  comp(r)->queued = 0;
  pthread_mutex_unlock(&q->mu);
  region_views_lock(r);
  while (comp(r)->running || comp(r)->inflight) region_views_wait(r);
  region_views_unlock(r);
}
