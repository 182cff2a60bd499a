#include "index/memtable.h"

#include <assert.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "index/node.h"
#include "io/fault.h"
#include "log/wal.h"
#include "util/coding.h"
#include "util/status.h"

#define FANOUT 32               /* entries per leaf, children per inner node */
#define ARENA_CHUNK (1u << 20)
#define ARENA_FIRST (16u << 10)

struct mt_node {
  uint16_t n;    /* entries in a leaf, separators in an inner node */
  uint8_t leaf;
  /* Every key this node can hold begins with the same skip bytes: those its
   * fences (the separators around it in its parent, and theirs above) share.
   * A node's range only narrows (a split halves it), so skip stays true; a
   * split recomputes it for both halves. */
  uint16_t skip;
  /* pfx[i] holds the 8 bytes of e[i]'s key after the first skip,
   * big-endian and zero-padded: unequal prefixes order keys without
   * touching the entries (cache misses). Keys that share a long start
   * ("user" and a number) still differ in the bytes after it. */
  uint64_t pfx[FANOUT];
  const mt_entry *e[FANOUT];     /* leaf: entries; inner: e[i] = first entry of c[i+1] */
  mt_node *c[FANOUT + 1];        /* inner only */
  mt_node *next, *prev;          /* leaf only: right and left siblings */
};

struct mt_arena_chunk {
  mt_arena_chunk *prev;
  size_t used, cap;
  uint8_t mem[];
};

int mt_category(const mt_entry *e) {
  return e->type == WAL_DELETE ? CAT_TOMBSTONE : e->type == WAL_PUT_LARGE ? CAT_LARGE : CAT_INLINE;
}

memtable *memtable_create(void) {
  memtable *m = calloc(1, sizeof *m);
  if (!m) return NULL;
  atomic_init(&m->refs, 1);
  pthread_rwlock_init(&m->lock, NULL);
  m->root = calloc(1, sizeof(mt_node));
  if (!m->root) {
    free(m);
    return NULL;
  }
  m->root->leaf = 1;
  atomic_init(&m->bytes, sizeof(mt_node));
  return m;
}

void memtable_set_budget(memtable *m, mem_budget *b) {
  assert(!m->budget && !m->entries && !m->chunks);
  m->budget = b;
  m->charged = sizeof(mt_node); /* the root */
  membudget_charge(b, m->charged);
}

void memtable_discharge(memtable *m) {
  if (m->budget && !atomic_exchange(&m->discharged, 1)) membudget_discharge(m->budget, m->charged);
}

/* Charges n bytes of memory m allocated (nodes, arena chunks) to its
 * budget. Only inserts allocate, and they all come before a discharge (a
 * frozen L0 takes none), so a discharge gives back all that was charged. */
static void charge(memtable *m, size_t n) {
  if (!m->budget) return;
  assert(!atomic_load(&m->discharged));
  m->charged += n;
  membudget_charge(m->budget, n);
}

void memtable_ref(memtable *m) { atomic_fetch_add(&m->refs, 1); }

static void free_nodes(mt_node *n) {
  if (!n->leaf)
    for (int i = 0; i <= n->n; i++) free_nodes(n->c[i]);
  free(n);
}

void memtable_unref(memtable *m) {
  if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
  memtable_discharge(m);
  free_nodes(m->root);
  free(m->rtombs);
  range_set_free(&m->rcover);
  for (mt_arena_chunk *c = m->chunks, *p; c; c = p) {
    p = c->prev;
    free(c);
  }
  pthread_rwlock_destroy(&m->lock);
  free(m);
}

static void *arena_alloc(memtable *m, size_t len) {
  len = ALIGN_UP(len, 8);
  if (fault_check(FAULT_L0_ENTRY, 0, &len)) return NULL;
  mt_arena_chunk *c = m->chunks;
  if (!c || c->cap - c->used < len) {
    /* Chunks grow from ARENA_FIRST to ARENA_CHUNK: an L0 holding little
     * (one of many regions under a memory budget) takes little. */
    size_t step = m->chunk_next ? m->chunk_next : ARENA_FIRST;
    size_t cap = len > step / 4 ? len : step;
    mt_arena_chunk *nc = malloc(sizeof *nc + cap);
    if (!nc) return NULL;
    charge(m, sizeof *nc + cap);
    if (cap == step) m->chunk_next = step < ARENA_CHUNK ? 2 * step : ARENA_CHUNK;
    nc->used = 0;
    nc->cap = cap;
    if (c && cap == len) { /* a dedicated chunk: keep filling the current one */
      nc->prev = c->prev;
      c->prev = nc;
      nc->used = len;
      atomic_fetch_add(&m->bytes, len);
      return nc->mem;
    }
    nc->prev = c;
    m->chunks = c = nc;
  }
  void *p = c->mem + c->used;
  c->used += len;
  atomic_fetch_add(&m->bytes, len);
  return p;
}

static uint64_t prefix_of(const void *key, size_t key_len) {
  uint8_t b[8] = {0};
  memcpy(b, key, key_len < 8 ? key_len : 8);
  uint64_t v;
  memcpy(&v, b, 8);
  return __builtin_bswap64(v);
}

/* The prefix of key after its first skip bytes. */
static uint64_t prefix_at(const void *key, size_t key_len, uint16_t skip) {
  assert(key_len >= skip);
  return prefix_of((const uint8_t *)key + skip, key_len - skip);
}

/* How many leading bytes a and b share. */
static uint16_t shared_len(const mt_entry *a, const mt_entry *b) {
  size_t n = a->key_len < b->key_len ? a->key_len : b->key_len, i = 0;
  while (i < n && mt_key(a)[i] == mt_key(b)[i]) i++;
  return (uint16_t)i;
}

/* A search target: (key, lsn) and the key's prefix after skip bytes, for
 * the skip of the node last searched (a descent's nodes skip more and more
 * of the same key). */
typedef struct target {
  const void *key;
  size_t key_len;
  uint64_t lsn;
  uint64_t pfx;
  uint16_t skip;
} target;

static target target_of(const void *key, size_t key_len, uint64_t lsn) {
  return (target){key, key_len, lsn, prefix_of(key, key_len), 0};
}

/* Makes t's prefix the one n's slots hold. t lies in n's range, so its key
 * begins with the n->skip bytes every key there shares. */
static void target_at(target *t, const mt_node *n) {
  assert(!n->n || (t->key_len >= n->skip && !memcmp(t->key, mt_key(n->e[0]), n->skip)));
  if (t->skip == n->skip) return;
  t->skip = n->skip;
  t->pfx = prefix_at(t->key, t->key_len, n->skip);
}

/* Order of (key, lsn): key ascending, then LSN descending (t at n). */
static int cmp(const mt_node *n, int i, const target *t) {
  assert(t->skip == n->skip);
  if (n->pfx[i] != t->pfx) return n->pfx[i] < t->pfx ? -1 : 1;
  const mt_entry *e = n->e[i];
  int c = key_cmp(mt_key(e), e->key_len, t->key, t->key_len);
  if (c) return c;
  return e->lsn > t->lsn ? -1 : e->lsn < t->lsn;
}

/* First index i in node with e[i] >= target. */
static int lower_bound(const mt_node *n, target *t) {
  target_at(t, n);
  int lo = 0, hi = n->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cmp(n, mid, t) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Child of an inner node that holds the first entry >= target: the number
 * of separators <= target. */
static int child_for(const mt_node *n, target *t) {
  target_at(t, n);
  int lo = 0, hi = n->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cmp(n, mid, t) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

static mt_node *node_alloc(void) {
  size_t len = sizeof(mt_node);
  return fault_check(FAULT_L0_NODE, 0, &len) ? NULL : calloc(1, sizeof(mt_node));
}

/* The skip of a node whose range lies between the fences lo and hi (NULL:
 * unbounded): every key from lo's to hi's begins with what the two share. */
static uint16_t skip_between(const mt_entry *lo, const mt_entry *hi) {
  return lo && hi ? shared_len(lo, hi) : 0;
}

/* Gives n the skip its narrowed range allows, rewriting its prefixes. */
static void set_skip(mt_node *n, uint16_t skip) {
  assert(skip >= n->skip); /* a narrower range shares at least as much */
  if (skip == n->skip) return;
  n->skip = skip;
  for (int i = 0; i < n->n; i++) n->pfx[i] = prefix_at(mt_key(n->e[i]), n->e[i]->key_len, skip);
}

/* Splits the full child c[i] of parent p into two halves; lo and hi are
 * p's fences (NULL: unbounded). */
static int split_child(memtable *m, mt_node *p, int i, const mt_entry *lo, const mt_entry *hi) {
  mt_node *l = p->c[i];
  mt_node *r = node_alloc();
  if (!r) return PAR_ENOMEM;
  atomic_fetch_add(&m->bytes, sizeof *r);
  charge(m, sizeof *r);
  r->leaf = l->leaf;
  r->skip = l->skip;
  const mt_entry *sep;
  if (i > 0) lo = p->e[i - 1];
  if (i < p->n) hi = p->e[i];
  if (l->leaf) {
    int half = l->n / 2;
    r->n = (uint16_t)(l->n - half);
    memcpy(r->e, l->e + half, r->n * sizeof *r->e);
    memcpy(r->pfx, l->pfx + half, r->n * sizeof *r->pfx);
    l->n = (uint16_t)half;
    r->next = l->next;
    r->prev = l;
    if (r->next) r->next->prev = r;
    l->next = r;
    sep = r->e[0];
  } else {
    int half = l->n / 2; /* l keeps e[0..half), e[half] moves up */
    sep = l->e[half];
    r->n = (uint16_t)(l->n - half - 1);
    memcpy(r->e, l->e + half + 1, r->n * sizeof *r->e);
    memcpy(r->pfx, l->pfx + half + 1, r->n * sizeof *r->pfx);
    memcpy(r->c, l->c + half + 1, (r->n + 1u) * sizeof *r->c);
    l->n = (uint16_t)half;
  }
  set_skip(l, skip_between(lo, sep));
  set_skip(r, skip_between(sep, hi));
  memmove(p->e + i + 1, p->e + i, (p->n - i) * sizeof *p->e);
  memmove(p->pfx + i + 1, p->pfx + i, (p->n - i) * sizeof *p->pfx);
  memmove(p->c + i + 2, p->c + i + 1, (p->n - i) * sizeof *p->c);
  p->e[i] = sep;
  p->pfx[i] = prefix_at(mt_key(sep), sep->key_len, p->skip);
  p->c[i + 1] = r;
  p->n++;
  return PAR_OK;
}

mt_entry *memtable_entry(memtable *m, uint64_t lsn, uint8_t type, const void *key, uint16_t key_len,
                         const void *value, uint32_t value_len) {
  pthread_rwlock_wrlock(&m->lock);
  mt_entry *e = arena_alloc(m, sizeof *e + key_len + value_len);
  pthread_rwlock_unlock(&m->lock);
  if (!e) {
    par_error(PAR_ENOMEM, "L0 entry of %u bytes", (unsigned)(sizeof *e + key_len + value_len));
    return NULL;
  }
  e->lsn = lsn;
  e->value_len = value_len;
  e->key_len = key_len;
  e->type = type;
  e->reserved = 0;
  memcpy(e->data, key, key_len);
  if (value_len) memcpy(e->data + key_len, value, value_len);
  return e;
}

/* A range tombstone joins the list beside the tree (write lock held). */
static int link_range_tomb(memtable *m, const mt_entry *e) {
  if (m->nrtombs == m->rtombs_cap) {
    uint32_t cap = m->rtombs_cap ? m->rtombs_cap * 2 : 8;
    const mt_entry **v = realloc(m->rtombs, cap * sizeof *v);
    if (!v) return par_error(PAR_ENOMEM, "L0 range tombstones");
    atomic_fetch_add(&m->bytes, (cap - m->rtombs_cap) * sizeof *v);
    m->rtombs = v;
    m->rtombs_cap = cap;
  }
  assert(!m->nrtombs || m->rtombs[m->nrtombs - 1]->lsn < e->lsn);
  int rc = range_set_add(&m->rcover, mt_key(e), e->key_len, mt_value(e), e->value_len);
  if (rc) return rc;
  m->rtombs[m->nrtombs] = e;
  __atomic_store_n(&m->nrtombs, m->nrtombs + 1, __ATOMIC_RELEASE); /* read without the lock */
  m->entries++;
  if (e->lsn > m->max_lsn) m->max_lsn = e->lsn;
  return PAR_OK;
}

/* Prefetches what a search of n reads: its count and prefix array, and with
 * whole also the entry and child pointers that follow (13 cache lines in
 * all). A search of one node then waits for about one cache miss instead of
 * one per line its binary search and child pointer touch in turn: par_get
 * of keys in a 2 M-entry L0, 1 245 -> 976 CPU ns per key (docs/benchmarks.md).
 * Groups of keys (memtable_get_many) prefetch the first part only: sixteen
 * whole nodes at a time cost more than they save. */
static void prefetch_node(const mt_node *n, int whole) {
  const char *p = (const char *)n;
  size_t end = whole ? sizeof *n : offsetof(mt_node, e);
  for (size_t off = 0; off < end; off += 64) __builtin_prefetch(p + off);
}

int memtable_link(memtable *m, const mt_entry *e) {
  pthread_rwlock_wrlock(&m->lock);
  if (e->type == WAL_DELETE_RANGE) {
    int rc = link_range_tomb(m, e);
    pthread_rwlock_unlock(&m->lock);
    return rc;
  }
  if (m->root->n == FANOUT) { /* split the root first: descents never backtrack */
    mt_node *r = node_alloc();
    if (!r) goto oom;
    atomic_fetch_add(&m->bytes, sizeof *r);
  charge(m, sizeof *r);
    r->c[0] = m->root;
    if (split_child(m, r, 0, NULL, NULL)) {
      free(r);
      goto oom;
    }
    m->root = r;
  }
  target t = target_of(mt_key(e), e->key_len, e->lsn);
  mt_node *n = m->root;
  const mt_entry *lo = NULL, *hi = NULL; /* n's fences */
  while (!n->leaf) {
    int i = child_for(n, &t);
    prefetch_node(n->c[i], 1); /* the insert reads its header, then searches it */
    if (n->c[i]->n == FANOUT) {
      if (split_child(m, n, i, lo, hi)) goto oom;
      if (cmp(n, i, &t) <= 0) i++;
    }
    if (i > 0) lo = n->e[i - 1];
    if (i < n->n) hi = n->e[i];
    n = n->c[i];
  }
  int i = lower_bound(n, &t);
  memmove(n->e + i + 1, n->e + i, (n->n - i) * sizeof *n->e);
  memmove(n->pfx + i + 1, n->pfx + i, (n->n - i) * sizeof *n->pfx);
  n->e[i] = e;
  n->pfx[i] = t.pfx; /* lower_bound left it at n's skip */
  n->n++;
  m->entries++;
  if (e->lsn > m->max_lsn) m->max_lsn = e->lsn;
  pthread_rwlock_unlock(&m->lock);
  return PAR_OK;
oom:
  pthread_rwlock_unlock(&m->lock);
  return par_error(PAR_ENOMEM, "L0 node");
}

int memtable_insert(memtable *m, uint64_t lsn, uint8_t type, const void *key, uint16_t key_len,
                    const void *value, uint32_t value_len) {
  mt_entry *e = memtable_entry(m, lsn, type, key, key_len, value, value_len);
  return e ? memtable_link(m, e) : PAR_ENOMEM;
}

/* Leaf and index of the first entry >= (key, lsn); n == NULL past the end. */
static const mt_node *seek(const memtable *m, const void *key, size_t key_len, uint64_t lsn, int *idx) {
  target t = target_of(key, key_len, lsn);
  const mt_node *n = m->root;
  while (!n->leaf) {
    n = n->c[child_for(n, &t)];
    prefetch_node(n, 1);
  }
  int i = lower_bound(n, &t);
  while (n && i == n->n) {
    n = n->next;
    i = 0;
  }
  *idx = i;
  return n;
}

int mt_range_holds(const mt_entry *t, const void *key, size_t key_len) {
  return key_cmp(mt_key(t), t->key_len, key, key_len) <= 0 && key_cmp(key, key_len, mt_value(t), t->value_len) < 0;
}

int memtable_range_hides(memtable *m, const void *key, size_t key_len, uint64_t snap, uint64_t newer_than) {
  if (!__atomic_load_n(&m->nrtombs, __ATOMIC_ACQUIRE)) return 0; /* the common case: no lock */
  int hides = 0;
  pthread_rwlock_rdlock(&m->lock);
  if (!newer_than && snap >= m->rtombs[m->nrtombs - 1]->lsn) {
    hides = range_set_covers(&m->rcover, key, key_len);
  } else {
    for (uint32_t i = m->nrtombs; i-- > 0 && m->rtombs[i]->lsn > newer_than;) /* newest first */
      if (m->rtombs[i]->lsn <= snap && mt_range_holds(m->rtombs[i], key, key_len)) {
        hides = 1;
        break;
      }
  }
  pthread_rwlock_unlock(&m->lock);
  return hides;
}

int memtable_range_tombs(memtable *m, uint64_t snap, const mt_entry ***out, uint32_t *n, range_set *cover) {
  *out = NULL;
  *n = 0;
  memset(cover, 0, sizeof *cover);
  if (!__atomic_load_n(&m->nrtombs, __ATOMIC_ACQUIRE)) return PAR_OK;
  pthread_rwlock_rdlock(&m->lock);
  uint32_t k = 0;
  while (k < m->nrtombs && m->rtombs[k]->lsn <= snap) k++; /* in LSN order */
  int rc = PAR_OK;
  if (k) {
    *out = malloc(k * sizeof **out);
    rc = *out ? PAR_OK : par_error(PAR_ENOMEM, "L0 range tombstones");
  }
  if (!rc && k) {
    memcpy(*out, m->rtombs, k * sizeof **out);
    *n = k;
    if (k == m->nrtombs) {
      rc = range_set_copy(cover, &m->rcover);
    } else {
      for (uint32_t i = 0; i < k && !rc; i++)
        rc = range_set_add(cover, mt_key(m->rtombs[i]), m->rtombs[i]->key_len, mt_value(m->rtombs[i]),
                           m->rtombs[i]->value_len);
    }
  }
  pthread_rwlock_unlock(&m->lock);
  return rc;
}

const mt_entry *memtable_get(memtable *m, const void *key, size_t key_len, uint64_t snap) {
  pthread_rwlock_rdlock(&m->lock);
  int i;
  const mt_node *n = seek(m, key, key_len, snap, &i);
  const mt_entry *e = n ? n->e[i] : NULL;
  if (e && key_cmp(mt_key(e), e->key_len, key, key_len) != 0) e = NULL;
  pthread_rwlock_unlock(&m->lock);
  return e;
}

/* The keys descend in groups, one level at a time for the whole group: each
 * step prefetches the nodes the group's keys go to next before any is
 * searched, so their cache misses overlap instead of coming one after
 * another as in n calls of memtable_get. Every leaf is at the same depth
 * (the tree grows only at the root), so a group reaches its leaves together. */
void memtable_get_many(memtable *m, size_t n, const void *const *keys, const size_t *lens, uint64_t snap,
                       const mt_entry **out) {
  enum { GROUP = 16 };
  pthread_rwlock_rdlock(&m->lock);
  for (size_t g = 0; g < n; g += GROUP) {
    size_t k = n - g < GROUP ? n - g : GROUP;
    target t[GROUP];
    const mt_node *nd[GROUP] = {0}; /* k >= 1 entries set below; the rest unused */
    int idx[GROUP];
    for (size_t j = 0; j < k; j++) {
      t[j] = target_of(keys[g + j], lens[g + j], snap);
      nd[j] = m->root;
    }
    while (!nd[0]->leaf) {
      for (size_t j = 0; j < k; j++) {
        assert(!nd[j]->leaf);
        nd[j] = nd[j]->c[child_for(nd[j], &t[j])];
        prefetch_node(nd[j], 0);
      }
    }
    for (size_t j = 0; j < k; j++) {
      assert(nd[j]->leaf);
      int i = lower_bound(nd[j], &t[j]);
      while (nd[j] && i == nd[j]->n) { /* past the leaf's end: the next leaf's first entry */
        nd[j] = nd[j]->next;
        i = 0;
      }
      idx[j] = i;
      if (nd[j]) __builtin_prefetch(nd[j]->e[i]);
    }
    for (size_t j = 0; j < k; j++) {
      const mt_entry *e = nd[j] ? nd[j]->e[idx[j]] : NULL;
      out[g + j] = e && key_cmp(mt_key(e), e->key_len, t[j].key, t[j].key_len) == 0 ? e : NULL;
    }
  }
  pthread_rwlock_unlock(&m->lock);
}

uint32_t memtable_collect(memtable *m, const void *key, size_t key_len, int exclusive, uint64_t snap,
                          const mt_entry **out, uint32_t max, mt_shadowed_fn shadowed, void *arg) {
  pthread_rwlock_rdlock(&m->lock);
  int i = 0;
  const mt_node *n;
  if (!key) {
    n = m->root;
    while (!n->leaf) n = n->c[0];
    if (!n->n) n = NULL;
  } else {
    /* LSN 0 is never used: (key, 0) sorts after every version of key. */
    n = seek(m, key, key_len, exclusive ? 0 : UINT64_MAX, &i);
  }
  uint32_t got = 0;
  const mt_entry *last = NULL;
  while (n) {
    const mt_entry *e = n->e[i];
    int same = last && key_cmp(mt_key(last), last->key_len, mt_key(e), e->key_len) == 0;
    if (got == max && !same) break; /* the last key's older versions are done too */
    if (e->lsn <= snap) {
      if (!same) out[got++] = last = e;
      else if (shadowed) shadowed(arg, e);
    }
    if (++i == n->n) {
      n = n->next;
      i = 0;
    }
  }
  pthread_rwlock_unlock(&m->lock);
  return got;
}

/* Leaf and index of the last entry < (key, lsn); n == NULL before the start. */
static const mt_node *seek_before(const memtable *m, const void *key, size_t key_len, uint64_t lsn,
                                  int *idx) {
  target t = target_of(key, key_len, lsn);
  const mt_node *n = m->root;
  while (!n->leaf) {
    n = n->c[child_for(n, &t)];
    prefetch_node(n, 1);
  }
  int i = lower_bound(n, &t) - 1;
  while (n && i < 0) {
    n = n->prev;
    i = n ? n->n - 1 : 0;
  }
  *idx = i;
  return n;
}

uint32_t memtable_collect_rev(memtable *m, const void *key, size_t key_len, int exclusive,
                              uint64_t snap, const mt_entry **out, uint32_t max) {
  pthread_rwlock_rdlock(&m->lock);
  int i = 0;
  const mt_node *n;
  if (!key) {
    n = m->root;
    while (!n->leaf) n = n->c[n->n];
    i = n->n - 1;
    if (i < 0) n = NULL;
  } else {
    /* (key, UINT64_MAX) sorts before every version of key, (key, 0) after. */
    n = seek_before(m, key, key_len, exclusive ? UINT64_MAX : 0, &i);
  }
  /* Walking backwards meets a key's versions oldest first: the newest
   * visible one is the last with LSN <= snap before the key changes. */
  uint32_t got = 0;
  const mt_entry *group = NULL, *best = NULL;
  while (n) {
    const mt_entry *e = n->e[i];
    if (!group || key_cmp(mt_key(group), group->key_len, mt_key(e), e->key_len) != 0) {
      if (best) out[got++] = best;
      if (got == max) break;
      group = e;
      best = NULL;
    }
    if (e->lsn <= snap) best = e;
    if (--i < 0) {
      n = n->prev;
      i = n ? n->n - 1 : 0;
    }
  }
  if (!n && best && got < max) out[got++] = best;
  pthread_rwlock_unlock(&m->lock);
  return got;
}

/* The fraction of the entries before every version of key: the child or
 * slot taken at each node splits the share its parent gave that node. */
static double rank(const memtable *m, const void *key, size_t key_len) {
  target t = target_of(key, key_len, UINT64_MAX); /* before key's newest version */
  const mt_node *n = m->root;
  double r = 0, w = 1;
  while (!n->leaf) {
    int i = child_for(n, &t);
    r += w * i / (n->n + 1);
    w /= n->n + 1;
    n = n->c[i];
  }
  return n->n ? r + w * lower_bound(n, &t) / n->n : r;
}

double memtable_range_share(memtable *m, const void *begin, size_t begin_len, const void *end,
                            size_t end_len, uint64_t *entries) {
  pthread_rwlock_rdlock(&m->lock);
  double b = begin ? rank(m, begin, begin_len) : 0;
  double e = end ? rank(m, end, end_len) : 1;
  *entries = m->entries;
  pthread_rwlock_unlock(&m->lock);
  return *entries && e > b ? e - b : 0; /* an empty L0's node memory is no data in the range */
}
