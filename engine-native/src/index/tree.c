#include "index/tree.h"

#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/coding.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

static uint64_t uid_take(void);

mseg_set *mseg_set_create(segalloc *a, seg_list *segs) {
  mseg_set *s = malloc(sizeof *s);
  if (!s) return NULL;
  atomic_init(&s->refs, 1);
  atomic_init(&s->unretired, 0);
  s->segs = *segs;
  memset(segs, 0, sizeof *segs);
  s->alloc = a;
  s->uid = uid_take();
  return s;
}

void mseg_set_ref(mseg_set *s) { atomic_fetch_add(&s->refs, 1); }

void mseg_set_unref(mseg_set *s) {
  if (atomic_fetch_sub(&s->refs, 1) != 1) return;
  if (atomic_load(&s->unretired) == 0)
    for (uint32_t i = 0; i < s->segs.n; i++) segalloc_free(s->alloc, s->segs.v[i]);
  seg_list_free(&s->segs);
  free(s);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

int node_checks_init(node_checks *c, const seg_list *segs) {
  memset(c, 0, sizeof *c);
  if (!segs->n) return PAR_OK;
  size_t words = (size_t)segs->n * (SEG / PAR_BLOCK / 64);
  c->segs = malloc(segs->n * sizeof *c->segs);
  c->bits = calloc(words, sizeof *c->bits);
  if (!c->segs || !c->bits) {
    node_checks_free(c);
    return par_error(PAR_ENOMEM, "node checksum bitmap");
  }
  memcpy(c->segs, segs->v, segs->n * sizeof *c->segs);
  qsort(c->segs, segs->n, sizeof *c->segs, cmp_u32);
  c->nsegs = segs->n;
  return PAR_OK;
}

void node_checks_free(node_checks *c) {
  free(c->segs);
  free((void *)c->bits);
  memset(c, 0, sizeof *c);
}

/* Verifies the checksum of the node at off once; PAR_ECORRUPT if it fails
 * or the node lies outside the tree's segments. */
static int check_node(node_checks *c, const uint8_t *node, uint64_t off, const node_hdr *h) {
  uint32_t seg = (uint32_t)(off / SEG), lo = 0, hi = c->nsegs;
  while (lo < hi) {
    uint32_t mid = (lo + hi) / 2;
    if (c->segs[mid] < seg) lo = mid + 1;
    else hi = mid;
  }
  if (lo == c->nsegs || c->segs[lo] != seg)
    return par_error(PAR_ECORRUPT, "B+-tree node at offset %llu is outside its tree", (unsigned long long)off);
  uint64_t bit = (uint64_t)lo * (SEG / PAR_BLOCK) + off % SEG / PAR_BLOCK;
  uint64_t mask = 1ull << (bit % 64);
  if (atomic_load_explicit(&c->bits[bit / 64], memory_order_acquire) & mask) return PAR_OK;
  if (node_crc(node, h->pages * PAR_BLOCK) != dec32(node))
    return par_error(PAR_ECORRUPT, "B+-tree node at offset %llu fails its checksum", (unsigned long long)off);
  atomic_fetch_or_explicit(&c->bits[bit / 64], mask, memory_order_release);
  return PAR_OK;
}

static atomic_uint_fast64_t uid_next;
static pthread_once_t uid_once = PTHREAD_ONCE_INIT;

/* A random start, so that two processes' trees (a primary's and the one
 * promoted after it) do not share numbers. */
static void uid_seed(void) {
  uint64_t r = 0;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, &r, sizeof r) : -1;
  if (fd >= 0) close(fd);
  if (n != (ssize_t)sizeof r) { /* no /dev/urandom: the clock and the process id */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    r = ((uint64_t)ts.tv_sec << 32) ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 16);
  }
  atomic_store(&uid_next, r);
}

static uint64_t uid_take(void) {
  pthread_once(&uid_once, uid_seed);
  return atomic_fetch_add(&uid_next, 1);
}

dtree *dtree_create_shared(segalloc *a, tree_desc *d, mseg_set **sets, uint32_t n) {
  dtree *t = malloc(sizeof *t);
  mseg_set **v = n ? malloc(n * sizeof *v) : NULL;
  if (!t || (n && !v) || node_checks_init(&t->checks, &d->segs)) {
    free(t);
    free(v);
    return NULL;
  }
  atomic_init(&t->refs, 1);
  atomic_init(&t->retired, 0);
  t->d = *d;
  memset(d, 0, sizeof *d);
  t->alloc = a;
  t->uid = uid_take();
  if (n) memcpy(v, sets, n * sizeof *v);
  for (uint32_t i = 0; i < n; i++) atomic_fetch_add(&v[i]->unretired, 1);
  t->sets = v;
  t->nsets = n;
  return t;
}

dtree *dtree_create(segalloc *a, tree_desc *d) {
  mseg_set *set = NULL;
  if (d->msegs.n) {
    seg_list copy;
    if (seg_list_copy(&copy, &d->msegs)) return NULL;
    set = mseg_set_create(a, &copy);
    if (!set) {
      seg_list_free(&copy);
      return NULL;
    }
  }
  dtree *t = dtree_create_shared(a, d, &set, set ? 1 : 0);
  if (!t && set) {
    seg_list_free(&set->segs); /* not the allocator's to get back: the catalog lists them */
    free(set);
  }
  return t;
}

void dtree_ref(dtree *t) { atomic_fetch_add(&t->refs, 1); }

void dtree_retire(dtree *t) {
  if (atomic_exchange(&t->retired, 1)) return;
  for (uint32_t i = 0; i < t->nsets; i++) atomic_fetch_sub(&t->sets[i]->unretired, 1);
}

void dtree_forget(dtree *t) {
  assert(!atomic_load(&t->retired));
  for (uint32_t i = 0; i < t->nsets; i++) atomic_fetch_sub(&t->sets[i]->unretired, 1);
}

void dtree_unref(dtree *t) {
  if (!t || atomic_fetch_sub(&t->refs, 1) != 1) return;
  int retired = atomic_load(&t->retired);
  if (retired)
    for (uint32_t i = 0; i < t->d.segs.n; i++) segalloc_free(t->alloc, t->d.segs.v[i]);
  for (uint32_t i = 0; i < t->nsets; i++) mseg_set_unref(t->sets[i]);
  free(t->sets);
  node_checks_free(&t->checks);
  tree_desc_free(&t->d);
  free(t);
}

/* The node at off, checked against the file, its expected height and, if
 * checks is not NULL, its checksum. */
static int load_node(const par_file *f, node_checks *checks, uint64_t off, int height,
                     const uint8_t **node, node_hdr *h) {
  uint64_t size = __atomic_load_n(&f->size, __ATOMIC_ACQUIRE);
  if (off + NODE_HDR > size)
    return par_error(PAR_ECORRUPT, "B+-tree node offset %llu is outside the volume", (unsigned long long)off);
  const uint8_t *n = file_map(f) + off;
  int rc = node_header(n, off, h);
  if (rc) return rc;
  if (h->height != height || off + (uint64_t)h->pages * PAR_BLOCK > size)
    return par_error(PAR_ECORRUPT, "B+-tree node at %llu has the wrong height or size", (unsigned long long)off);
  if (checks && (rc = check_node(checks, n, off, h))) return rc;
  *node = n;
  return PAR_OK;
}

/* The offset of the leaf that can hold key: descends the index nodes. */
static int find_leaf(const key_source *ks, const tree_desc *t, node_checks *checks, const void *key,
                     size_t key_len, uint64_t *leaf) {
  uint64_t off = t->root;
  for (int height = (int)t->height - 1; height > 0; height--) {
    const uint8_t *n = NULL;
    node_hdr h;
    uint32_t idx;
    const uint8_t *k;
    uint16_t kl;
    int rc = load_node(ks->file, checks, off, height, &n, &h);
    if (!rc) rc = index_child_for(n, &h, key, key_len, &idx);
    if (!rc) rc = index_entry(n, &h, idx, &off, &k, &kl);
    if (rc) return rc;
  }
  *leaf = off;
  return PAR_OK;
}

int tree_find_leaf(const key_source *ks, const tree_desc *t, node_checks *checks, const void *key,
                   size_t key_len, uint64_t *leaf) {
  if (!t->root) return PAR_NOT_FOUND;
  if (!t->height) return par_error(PAR_ECORRUPT, "B+-tree of height 0 with a root");
  return find_leaf(ks, t, checks, key, key_len, leaf);
}

/* The fraction of t's entries before key. Leaves are written in key order
 * (tree_desc.segs), packed into segments with index nodes spread evenly
 * among them, so the bytes written before the leaf where key belongs, plus
 * the slots before it in that leaf, over the tree's bytes, estimate its
 * rank whatever the tree's shape (a fan-out estimate would misjudge the
 * partly filled nodes on the right edge of a tree built bottom-up). A key
 * before the first entry or after the last ranks exactly 0 or 1. */
static int tree_rank(const key_source *ks, const tree_desc *t, node_checks *checks, const void *key,
                     size_t key_len, double *rank) {
  int first = 1, last = 1; /* every node so far was entered by its first (last) slot */
  uint64_t off = t->root;
  for (int height = (int)t->height - 1;; height--) {
    const uint8_t *n = NULL;
    node_hdr h;
    uint32_t idx;
    int rc = load_node(ks->file, checks, off, height, &n, &h);
    if (rc) return rc;
    if (!h.nslots) return par_error(PAR_ECORRUPT, "B+-tree node at %llu has no slots", (unsigned long long)off);
    if (height == 0) {
      rc = leaf_lower_bound(n, &h, ks, key, key_len, 0, &idx);
      if (rc) return rc;
      if ((first && idx == 0) || (last && idx == h.nslots)) {
        *rank = idx ? 1 : 0;
        return PAR_OK;
      }
      uint32_t si = 0, seg = (uint32_t)(off / SEG);
      while (si < t->segs.n && t->segs.v[si] != seg) si++;
      if (si == t->segs.n)
        return par_error(PAR_ECORRUPT, "B+-tree node at offset %llu is outside its tree", (unsigned long long)off);
      double pos = (double)si * SEG + (double)(off % SEG) + (double)h.pages * PAR_BLOCK * idx / h.nslots;
      *rank = t->bytes && pos < (double)t->bytes ? pos / (double)t->bytes : 1;
      return PAR_OK;
    }
    const uint8_t *k;
    uint16_t kl;
    rc = index_child_for(n, &h, key, key_len, &idx);
    if (!rc) rc = index_entry(n, &h, idx, &off, &k, &kl);
    if (rc) return rc;
    first &= idx == 0;
    last &= idx + 1 == h.nslots;
  }
}

int tree_range_share(const key_source *ks, const tree_desc *t, node_checks *checks, const void *begin,
                     size_t begin_len, const void *end, size_t end_len, double *share) {
  double b = 0, e = 1;
  *share = 0;
  if (!t->root) return PAR_OK;
  int rc = begin ? tree_rank(ks, t, checks, begin, begin_len, &b) : PAR_OK;
  if (!rc && end) rc = tree_rank(ks, t, checks, end, end_len, &e);
  if (rc) return rc;
  *share = e > b ? e - b : 0;
  return PAR_OK;
}

/* Looks key up in the leaf at off: PAR_OK with *e, or PAR_NOT_FOUND. */
/* Finds key in the leaf n. */
static int search_node(const key_source *ks, const uint8_t *n, const node_hdr *h, const void *key,
                       size_t key_len, tree_entry *e) {
  uint32_t idx;
  int rc = leaf_lower_bound(n, h, ks, key, key_len, 0, &idx);
  if (rc) return rc;
  if (idx == h->nslots) return PAR_NOT_FOUND;
  rc = leaf_entry(n, h, idx, e);
  e->ks = ks;
  int c;
  if (!rc) rc = entry_cmp_key(e, key, key_len, &c);
  if (rc) return rc;
  if (c) return PAR_NOT_FOUND;
  e->key = key; /* whole, where the leaf may hold a prefix */
  e->key_len = (uint16_t)key_len;
  e->full_len = 0;
  return PAR_OK;
}

static int search_leaf(const key_source *ks, node_checks *checks, uint64_t off, const void *key,
                       size_t key_len, tree_entry *e) {
  const uint8_t *n = NULL;
  node_hdr h;
  int rc = load_node(ks->file, checks, off, 0, &n, &h);
  return rc ? rc : search_node(ks, n, &h, key, key_len, e);
}

/* The leaf at off read into buf (LEAF_SIZE bytes) through the page cache and
 * checked as load_node checks a mapped one; 1 for a leaf larger than buf
 * (a jumbo pair's), which the caller reads through the map. */
static int read_leaf(const par_file *f, node_checks *checks, uint64_t off, uint8_t *buf, node_hdr *h) {
  uint64_t size = __atomic_load_n(&f->size, __ATOMIC_ACQUIRE);
  if (off + NODE_HDR > size)
    return par_error(PAR_ECORRUPT, "B+-tree node offset %llu is outside the volume", (unsigned long long)off);
  int rc = file_read_cached(f, buf, size - off < LEAF_SIZE ? size - off : LEAF_SIZE, off);
  if (!rc) rc = node_header(buf, off, h);
  if (rc) return rc;
  if (h->height != 0 || off + (uint64_t)h->pages * PAR_BLOCK > size)
    return par_error(PAR_ECORRUPT, "B+-tree node at %llu has the wrong height or size", (unsigned long long)off);
  if ((uint64_t)h->pages * PAR_BLOCK > LEAF_SIZE) return 1;
  return checks ? check_node(checks, buf, off, h) : PAR_OK;
}

int tree_get(const key_source *ks, const tree_desc *t, node_checks *checks, const void *key,
             size_t key_len, uint8_t *leaf_buf, tree_entry *e) {
  if (!t->root) return PAR_NOT_FOUND;
  if (!t->height) return par_error(PAR_ECORRUPT, "B+-tree of height 0 with a root");
  uint64_t leaf;
  int rc = find_leaf(ks, t, checks, key, key_len, &leaf);
  if (rc) return rc;
  node_hdr h;
  if (leaf_buf && (rc = read_leaf(ks->file, checks, leaf, leaf_buf, &h)) <= 0)
    return rc ? rc : search_node(ks, leaf_buf, &h, key, key_len, e);
  return search_leaf(ks, checks, leaf, key, key_len, e);
}

/* Asks for the lines a binary search of the leaf at off will read first:
 * the header and slot array, then the entries of its first three probes. */
static void prefetch_leaf(const par_file *f, uint64_t off, int stage) {
  if (off + LEAF_SIZE > __atomic_load_n(&f->size, __ATOMIC_ACQUIRE)) return;
  const uint8_t *n = file_map(f) + off; /* after the size: the map covers it */
  if (stage == 0) {
    for (uint32_t i = 0; i < 1024; i += 64) __builtin_prefetch(n + i);
    return;
  }
  uint32_t nslots = dec32(n + 12);
  if (nslots > (LEAF_SIZE - NODE_HDR) / 4) return; /* a big leaf, or damage: no guessing */
  for (uint32_t d = 2; d <= 16; d *= 2)
    for (uint32_t q = 1; q < d; q += 2) {
      uint32_t slot = dec32(n + NODE_HDR + 4 * (nslots * q / d));
      if (SLOT_OFF(slot) < LEAF_SIZE) __builtin_prefetch(n + SLOT_OFF(slot));
    }
}

void tree_get_batch(const key_source *ks, const tree_desc *t, node_checks *checks, size_t n,
                    const void *const *keys, const size_t *lens, tree_entry *e, int *rc) {
  enum { GROUP = 16 };
  uint64_t leaf[GROUP];
  for (size_t g = 0; g < n; g += GROUP) {
    size_t m = n - g < GROUP ? n - g : GROUP;
    for (size_t j = 0; j < m; j++) {
      rc[g + j] = !t->root ? PAR_NOT_FOUND
                  : !t->height ? par_error(PAR_ECORRUPT, "B+-tree of height 0 with a root")
                               : find_leaf(ks, t, checks, keys[g + j], lens[g + j], &leaf[j]);
      if (!rc[g + j]) prefetch_leaf(ks->file, leaf[j], 0);
    }
    for (size_t j = 0; j < m; j++)
      if (!rc[g + j]) prefetch_leaf(ks->file, leaf[j], 1);
    for (size_t j = 0; j < m; j++)
      if (!rc[g + j]) rc[g + j] = search_leaf(ks, checks, leaf[j], keys[g + j], lens[g + j], &e[g + j]);
  }
}

void tree_cursor_init(tree_cursor *c, const key_source *ks, const tree_desc *t, node_checks *checks) {
  memset(c, 0, sizeof *c);
  c->ks = ks;
  c->checks = checks;
  c->tree = t;
}

static int load_current(tree_cursor *c) {
  typeof(c->path[0]) *p = &c->path[c->depth - 1];
  int rc = leaf_entry(p->node, &p->h, p->idx, &c->cur);
  c->cur.ks = c->ks;
  return rc;
}

/* Descends from path[depth-1]'s current child to the leftmost leaf. */
static int descend_leftmost(tree_cursor *c) {
  for (;;) {
    typeof(c->path[0]) *p = &c->path[c->depth - 1];
    if (p->h.height == 0) return PAR_OK;
    uint64_t child;
    const uint8_t *k;
    uint16_t kl;
    int rc = index_entry(p->node, &p->h, p->idx, &child, &k, &kl);
    if (!rc) rc = load_node(c->ks->file, c->checks, child, p->h.height - 1, &c->path[c->depth].node, &c->path[c->depth].h);
    if (rc) return rc;
    c->path[c->depth].idx = 0;
    c->depth++;
  }
}

/* Moves past the end of the current leaf to the next one. */
static int advance_leaf(tree_cursor *c) {
  while (c->depth > 1) {
    c->depth--;
    typeof(c->path[0]) *p = &c->path[c->depth - 1];
    if (++p->idx < p->h.nslots) {
      int rc = descend_leftmost(c);
      if (rc) return rc;
      if (c->path[c->depth - 1].h.nslots) return load_current(c);
    }
  }
  c->depth = 0;
  return PAR_OK;
}

int tree_cursor_seek(tree_cursor *c, const void *key, size_t key_len, int exclusive) {
  c->depth = 0;
  if (!c->tree->root) return PAR_OK;
  int rc = load_node(c->ks->file, c->checks, c->tree->root, (int)c->tree->height - 1, &c->path[0].node, &c->path[0].h);
  if (rc) return rc;
  c->depth = 1;
  for (;;) {
    typeof(c->path[0]) *p = &c->path[c->depth - 1];
    if (p->h.height == 0) {
      if (key) rc = leaf_lower_bound(p->node, &p->h, c->ks, key, key_len, exclusive, &p->idx);
      else p->idx = 0;
      if (rc) return rc;
      if (p->idx < p->h.nslots) return load_current(c);
      return advance_leaf(c);
    }
    if (key) rc = index_child_for(p->node, &p->h, key, key_len, &p->idx);
    else p->idx = 0;
    uint64_t child;
    const uint8_t *k;
    uint16_t kl;
    if (!rc) rc = index_entry(p->node, &p->h, p->idx, &child, &k, &kl);
    if (!rc) rc = load_node(c->ks->file, c->checks, child, p->h.height - 1, &c->path[c->depth].node, &c->path[c->depth].h);
    if (rc) {
      c->depth = 0;
      return rc;
    }
    c->depth++;
  }
}

/* Descends from path[depth-1]'s current child to the rightmost leaf, each
 * node positioned on its last slot. */
static int descend_rightmost(tree_cursor *c) {
  for (;;) {
    typeof(c->path[0]) *p = &c->path[c->depth - 1];
    if (p->h.height == 0) return PAR_OK;
    uint64_t child;
    const uint8_t *k;
    uint16_t kl;
    int rc = index_entry(p->node, &p->h, p->idx, &child, &k, &kl);
    typeof(c->path[0]) *q = &c->path[c->depth];
    if (!rc) rc = load_node(c->ks->file, c->checks, child, p->h.height - 1, &q->node, &q->h);
    if (rc) return rc;
    q->idx = q->h.nslots ? q->h.nslots - 1 : 0;
    c->depth++;
  }
}

/* Moves before the start of the current leaf to the previous one. */
static int retreat_leaf(tree_cursor *c) {
  while (c->depth > 1) {
    c->depth--;
    typeof(c->path[0]) *p = &c->path[c->depth - 1];
    if (p->idx > 0) {
      p->idx--;
      int rc = descend_rightmost(c);
      if (rc) return rc;
      if (c->path[c->depth - 1].h.nslots) return load_current(c);
    }
  }
  c->depth = 0;
  return PAR_OK;
}

int tree_cursor_seek_rev(tree_cursor *c, const void *key, size_t key_len, int exclusive) {
  c->depth = 0;
  if (!c->tree->root) return PAR_OK;
  int rc = load_node(c->ks->file, c->checks, c->tree->root, (int)c->tree->height - 1, &c->path[0].node, &c->path[0].h);
  if (rc) return rc;
  c->depth = 1;
  if (!key) {
    c->path[0].idx = c->path[0].h.nslots ? c->path[0].h.nslots - 1 : 0;
    rc = descend_rightmost(c);
    if (!rc) rc = c->path[c->depth - 1].h.nslots ? load_current(c) : retreat_leaf(c);
    if (rc) c->depth = 0;
    return rc;
  }
  /* Down to the child that can hold key: every entry of the children before
   * it is below its pivot, which is <= key. */
  for (;;) {
    typeof(c->path[0]) *p = &c->path[c->depth - 1];
    if (p->h.height == 0) break;
    rc = index_child_for(p->node, &p->h, key, key_len, &p->idx);
    uint64_t child;
    const uint8_t *k;
    uint16_t kl;
    if (!rc) rc = index_entry(p->node, &p->h, p->idx, &child, &k, &kl);
    if (!rc) rc = load_node(c->ks->file, c->checks, child, p->h.height - 1, &c->path[c->depth].node, &c->path[c->depth].h);
    if (rc) {
      c->depth = 0;
      return rc;
    }
    c->depth++;
  }
  typeof(c->path[0]) *p = &c->path[c->depth - 1];
  uint32_t idx;
  /* The first slot past the target; the entry wanted is just before it. */
  rc = leaf_lower_bound(p->node, &p->h, c->ks, key, key_len, !exclusive, &idx);
  if (!rc && idx > 0) {
    p->idx = idx - 1;
    rc = load_current(c);
  } else if (!rc) {
    rc = retreat_leaf(c);
  }
  if (rc) c->depth = 0;
  return rc;
}

int tree_cursor_prev(tree_cursor *c) {
  if (!c->depth) return PAR_OK;
  typeof(c->path[0]) *p = &c->path[c->depth - 1];
  int rc;
  if (p->idx > 0) {
    p->idx--;
    rc = load_current(c);
  } else {
    rc = retreat_leaf(c);
  }
  if (rc) c->depth = 0;
  return rc;
}

int tree_cursor_next(tree_cursor *c) {
  if (!c->depth) return PAR_OK;
  typeof(c->path[0]) *p = &c->path[c->depth - 1];
  int rc = ++p->idx < p->h.nslots ? load_current(c) : advance_leaf(c);
  if (rc) c->depth = 0;
  return rc;
}

/* ---- streaming for compaction ---------------------------------------- */

static int stream_load_segment(tree_stream *s) {
  while (s->seg_idx < s->tree->segs.n) {
    uint32_t seg = s->tree->segs.v[s->seg_idx++];
    /* Through the page cache (no readahead: the descriptor is
     * POSIX_FADV_RANDOM): a tree a recent merge wrote is often still there
     * (index/builder.c). */
    int rc = file_read_cached(s->file, s->buf, SEG, seg_offset(seg));
    if (rc) return rc;
    s->bytes_read += SEG;
    s->off = 0;
    return PAR_OK;
  }
  s->valid = 0;
  return PAR_OK;
}

/* Advances to the next leaf slot, crossing nodes and segments. */
static int stream_advance(tree_stream *s) {
  for (;;) {
    if (s->valid && s->h.type == NODE_LEAF && s->slot < s->h.nslots) {
      int rc = leaf_entry(s->buf + s->off, &s->h, s->slot, &s->cur);
      s->cur.ks = s->ks;
      return rc;
    }
    if (s->valid) s->off += s->h.pages * PAR_BLOCK; /* past the node just read */
    s->valid = 1;
    if (s->off + NODE_HDR > SEG || dec16(s->buf + s->off + 4) == 0) {
      if (s->seg_idx == s->tree->segs.n) {
        s->valid = 0;
        return PAR_OK;
      }
      int rc = stream_load_segment(s);
      if (rc) return rc;
    }
    uint64_t off = seg_offset(s->tree->segs.v[s->seg_idx - 1]) + s->off;
    int rc = node_header(s->buf + s->off, off, &s->h);
    if (rc) return rc;
    if (node_crc(s->buf + s->off, s->h.pages * PAR_BLOCK) != dec32(s->buf + s->off))
      return par_error(PAR_ECORRUPT, "B+-tree node at offset %llu fails its checksum", (unsigned long long)off);
    s->slot = 0;
  }
}

int tree_stream_open(tree_stream *s, par_file *f, const key_source *ks, const tree_desc *t) {
  memset(s, 0, sizeof *s);
  s->file = f;
  s->ks = ks;
  s->tree = t;
  if (!t->root) return PAR_OK;
  s->buf = file_buf_alloc(SEG);
  if (!s->buf) return par_error(PAR_ENOMEM, "compaction read buffer");
  int rc = stream_load_segment(s);
  if (rc) return rc;
  s->valid = 0;
  s->off = 0;
  /* Position on the first node of the first segment without skipping it. */
  s->valid = 1;
  rc = node_header(s->buf, seg_offset(t->segs.v[0]), &s->h);
  if (!rc && node_crc(s->buf, s->h.pages * PAR_BLOCK) != dec32(s->buf))
    rc = par_error(PAR_ECORRUPT, "B+-tree node at offset %llu fails its checksum",
                   (unsigned long long)seg_offset(t->segs.v[0]));
  s->slot = 0;
  return rc ? rc : stream_advance(s);
}

int tree_stream_next(tree_stream *s) {
  if (!s->valid) return PAR_OK;
  s->slot++;
  return stream_advance(s);
}

void tree_stream_close(tree_stream *s) {
  free(s->buf);
  memset(s, 0, sizeof *s);
}
