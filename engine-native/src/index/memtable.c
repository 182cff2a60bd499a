#include "index/memtable.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/status.h"

#define FANOUT 32               /* entries per leaf, children per inner node */
#define ARENA_CHUNK (1u << 20)

struct mt_node {
  uint16_t n;    /* entries in a leaf, separators in an inner node */
  uint8_t leaf;
  const mt_entry *e[FANOUT];     /* leaf: entries; inner: e[i] = first entry of c[i+1] */
  mt_node *c[FANOUT + 1];        /* inner only */
  mt_node *next;                 /* leaf only: right sibling */
};

struct mt_arena_chunk {
  mt_arena_chunk *prev;
  size_t used, cap;
  uint8_t mem[];
};

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

void memtable_ref(memtable *m) { atomic_fetch_add(&m->refs, 1); }

static void free_nodes(mt_node *n) {
  if (!n->leaf)
    for (int i = 0; i <= n->n; i++) free_nodes(n->c[i]);
  free(n);
}

void memtable_unref(memtable *m) {
  if (!m || atomic_fetch_sub(&m->refs, 1) != 1) return;
  free_nodes(m->root);
  for (mt_arena_chunk *c = m->chunks, *p; c; c = p) {
    p = c->prev;
    free(c);
  }
  pthread_rwlock_destroy(&m->lock);
  free(m);
}

static void *arena_alloc(memtable *m, size_t len) {
  len = ALIGN_UP(len, 8);
  mt_arena_chunk *c = m->chunks;
  if (!c || c->cap - c->used < len) {
    size_t cap = len > ARENA_CHUNK / 4 ? len : ARENA_CHUNK;
    mt_arena_chunk *nc = malloc(sizeof *nc + cap);
    if (!nc) return NULL;
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

/* Order of (key, lsn): key ascending, then LSN descending. */
static int cmp(const mt_entry *e, const void *key, size_t key_len, uint64_t lsn) {
  int c = key_cmp(mt_key(e), e->key_len, key, key_len);
  if (c) return c;
  return e->lsn > lsn ? -1 : e->lsn < lsn;
}

/* First index i in node with e[i] >= (key, lsn). */
static int lower_bound(const mt_node *n, const void *key, size_t key_len, uint64_t lsn) {
  int lo = 0, hi = n->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cmp(n->e[mid], key, key_len, lsn) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Child of an inner node that holds the first entry >= (key, lsn): the
 * number of separators <= (key, lsn). */
static int child_for(const mt_node *n, const void *key, size_t key_len, uint64_t lsn) {
  int lo = 0, hi = n->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (cmp(n->e[mid], key, key_len, lsn) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* Splits the full child c[i] of parent p into two halves. */
static int split_child(memtable *m, mt_node *p, int i) {
  mt_node *l = p->c[i];
  mt_node *r = calloc(1, sizeof *r);
  if (!r) return PAR_ENOMEM;
  atomic_fetch_add(&m->bytes, sizeof *r);
  r->leaf = l->leaf;
  const mt_entry *sep;
  if (l->leaf) {
    int half = l->n / 2;
    r->n = (uint16_t)(l->n - half);
    memcpy(r->e, l->e + half, r->n * sizeof *r->e);
    l->n = (uint16_t)half;
    r->next = l->next;
    l->next = r;
    sep = r->e[0];
  } else {
    int half = l->n / 2; /* l keeps e[0..half), e[half] moves up */
    sep = l->e[half];
    r->n = (uint16_t)(l->n - half - 1);
    memcpy(r->e, l->e + half + 1, r->n * sizeof *r->e);
    memcpy(r->c, l->c + half + 1, (r->n + 1u) * sizeof *r->c);
    l->n = (uint16_t)half;
  }
  memmove(p->e + i + 1, p->e + i, (p->n - i) * sizeof *p->e);
  memmove(p->c + i + 2, p->c + i + 1, (p->n - i) * sizeof *p->c);
  p->e[i] = sep;
  p->c[i + 1] = r;
  p->n++;
  return PAR_OK;
}

int memtable_insert(memtable *m, uint64_t lsn, uint8_t type, const void *key, uint16_t key_len,
                    const void *value, uint32_t value_len) {
  pthread_rwlock_wrlock(&m->lock);
  mt_entry *e = arena_alloc(m, sizeof *e + key_len + value_len);
  if (!e) goto oom;
  e->lsn = lsn;
  e->value_len = value_len;
  e->key_len = key_len;
  e->type = type;
  e->reserved = 0;
  memcpy(e->data, key, key_len);
  if (value_len) memcpy(e->data + key_len, value, value_len);

  if (m->root->n == FANOUT) { /* split the root first: descents never backtrack */
    mt_node *r = calloc(1, sizeof *r);
    if (!r) goto oom;
    atomic_fetch_add(&m->bytes, sizeof *r);
    r->c[0] = m->root;
    if (split_child(m, r, 0)) {
      free(r);
      goto oom;
    }
    m->root = r;
  }
  mt_node *n = m->root;
  while (!n->leaf) {
    int i = child_for(n, key, key_len, lsn);
    if (n->c[i]->n == FANOUT) {
      if (split_child(m, n, i)) goto oom;
      if (cmp(n->e[i], key, key_len, lsn) <= 0) i++;
    }
    n = n->c[i];
  }
  int i = lower_bound(n, key, key_len, lsn);
  memmove(n->e + i + 1, n->e + i, (n->n - i) * sizeof *n->e);
  n->e[i] = e;
  n->n++;
  m->entries++;
  if (lsn > m->max_lsn) m->max_lsn = lsn;
  pthread_rwlock_unlock(&m->lock);
  return PAR_OK;
oom:
  pthread_rwlock_unlock(&m->lock);
  return par_error(PAR_ENOMEM, "L0 insert");
}

/* Leaf and index of the first entry >= (key, lsn); n == NULL past the end. */
static const mt_node *seek(const memtable *m, const void *key, size_t key_len, uint64_t lsn, int *idx) {
  const mt_node *n = m->root;
  while (!n->leaf) n = n->c[child_for(n, key, key_len, lsn)];
  int i = lower_bound(n, key, key_len, lsn);
  while (n && i == n->n) {
    n = n->next;
    i = 0;
  }
  *idx = i;
  return n;
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

uint32_t memtable_collect(memtable *m, const void *key, size_t key_len, int exclusive, uint64_t snap,
                          const mt_entry **out, uint32_t max) {
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
  while (n && got < max) {
    const mt_entry *e = n->e[i];
    if (e->lsn <= snap &&
        !(last && key_cmp(mt_key(last), last->key_len, mt_key(e), e->key_len) == 0)) {
      out[got++] = e;
      last = e;
    }
    if (++i == n->n) {
      n = n->next;
      i = 0;
    }
  }
  pthread_rwlock_unlock(&m->lock);
  return got;
}
