#include "scan/readahead.h"

#include <assert.h>
#include <string.h>

#include "alloc/segalloc.h"
#include "index/node.h"
#include "log/vlog.h"

static void ask_file(void *f, uint64_t off, uint64_t len) { file_prefetch(f, off, len); }

void scan_readahead_init(scan_readahead *ra, const par_file *f) {
  *ra = (scan_readahead){.ask = ask_file, .ctx = (void *)f, .window = SCAN_RA_FIRST};
}

/* Records closer than this to the gathered run join it: one request. */
#define RUN_GAP 4096u

/* Asks for the ranges gathered by this step, in file order, those closer
 * than RUN_GAP to each other as one request. */
static void flush(scan_readahead *ra) {
  range *v = ra->pending;
  for (uint32_t i = 1; i < ra->npending; i++) /* insertion sort: a few dozen */
    for (uint32_t j = i; j > 0 && v[j].off < v[j - 1].off; j--) {
      range t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
  for (uint32_t i = 0; i < ra->npending;) {
    uint64_t off = v[i].off, end = v[i].off + v[i].len;
    for (i++; i < ra->npending && v[i].off <= end + RUN_GAP; i++)
      if (v[i].off + v[i].len > end) end = v[i].off + v[i].len;
    ra->ask(ra->ctx, off, end - off);
  }
  ra->npending = 0;
}

static void ask_range(scan_readahead *ra, uint64_t off, uint64_t len) {
  if (ra->npending == SCAN_RA_PENDING) flush(ra);
  ra->pending[ra->npending++] = (range){off, len};
}

/* The log record of slot i, if its entry has one. A damaged entry is left
 * to the read that reaches it, which reports it. */
static void ask_slot(scan_readahead *ra, const uint8_t *node, const node_hdr *h, uint32_t i) {
  tree_entry e;
  if (leaf_entry(node, h, i, &e) || (e.cat != CAT_LARGE && e.cat != CAT_MEDIUM) || e.value_len != VPTR_SIZE)
    return;
  vptr p = vptr_decode(e.value);
  ask_range(ra, seg_offset(p.seg) + p.off, p.size < SCAN_RA_MAX_RECORD ? p.size : SCAN_RA_MAX_RECORD);
}

/* The leaf after (before, in reverse) the cursor's, if the same parent
 * holds it: one leaf in a few hundred is a parent's last, where this gives
 * up rather than walk up the tree. */
static void ask_sibling(scan_readahead *ra, const tree_cursor *c) {
  ra->sibling_asked = 1;
  if (c->depth < 2) return;
  const typeof(c->path[0]) *parent = &c->path[c->depth - 2];
  if (ra->reverse ? parent->idx == 0 : parent->idx + 1 >= parent->h.nslots) return;
  uint64_t child;
  const uint8_t *k;
  uint16_t kl;
  if (!index_entry(parent->node, &parent->h, ra->reverse ? parent->idx - 1 : parent->idx + 1, &child, &k, &kl))
    ask_range(ra, child, LEAF_SIZE);
}

/* Whether key lies within the span's bound: at or before it forward, at or
 * after it in reverse. Either key may be a prefix of the whole key
 * (index/entry.h), so keys equal over their common length are within. */
static int within_bound(const scan_readahead *ra, const uint8_t *key, uint16_t key_len) {
  if (!ra->bound) return 1;
  uint16_t n = key_len < ra->bound_len ? key_len : ra->bound_len;
  int c = memcmp(key, ra->bound, n);
  return ra->reverse ? c >= 0 : c <= 0;
}

/* Whether slot i of the span's first leaf is one a newer level hides. */
static int is_hidden(const scan_readahead *ra, uint32_t i) {
  if (!ra->hidden) return 0;
  uint32_t pos = ra->reverse ? ra->hidden_from - i : i - ra->hidden_from;
  assert(ra->reverse ? i <= ra->hidden_from : i >= ra->hidden_from);
  return pos < SCAN_RA_HIDDEN_MAX && (ra->hidden[pos / 64] >> (pos % 64) & 1);
}

/* Asks for the span's entries in the cursor's leaf from ra->asked on, and
 * for the next leaf if the span runs past this one. */
static void ask_span(scan_readahead *ra, const tree_cursor *c) {
  const typeof(c->path[0]) *p = &c->path[c->depth - 1];
  ra->spanning = 1;
  while (ra->span_left && (ra->reverse ? ra->asked > 0 : ra->asked < p->h.nslots)) {
    uint32_t i = ra->reverse ? ra->asked - 1 : ra->asked;
    tree_entry e;
    if (!leaf_entry(p->node, &p->h, i, &e) && !within_bound(ra, e.key, e.key_len)) {
      ra->span_left = 0;
      break;
    }
    if (!is_hidden(ra, i)) ask_slot(ra, p->node, &p->h, i);
    ra->asked = ra->reverse ? i : i + 1;
    ra->span_left--;
  }
  if (ra->span_left && ra->asked == (ra->reverse ? 0 : p->h.nslots) && !ra->sibling_asked) ask_sibling(ra, c);
}

void scan_readahead_span(scan_readahead *ra, const tree_cursor *c, int reverse, uint32_t n,
                         const uint8_t *bound, uint16_t bound_len, const scan_hidden *hidden) {
  assert(tree_cursor_valid(c) && n > 0);
  const typeof(c->path[0]) *p = &c->path[c->depth - 1];
  assert(p->h.height == 0 && p->idx < p->h.nslots);
  ra->leaf = p->node;
  ra->reverse = reverse;
  ra->asked = reverse ? p->idx + 1 : p->idx;
  ra->sibling_asked = 0;
  ra->window = SCAN_RA_ENTRIES;
  ra->span_left = n < SCAN_RA_SPAN_MAX ? n : SCAN_RA_SPAN_MAX;
  ra->bound = bound;
  ra->bound_len = bound_len;
  ra->hidden = hidden ? *hidden : NULL;
  ra->hidden_from = p->idx;
  ask_span(ra, c);
  ra->hidden = NULL; /* the positions are the first leaf's */
  flush(ra);
}

int scan_key_ahead(const tree_cursor *c, int reverse, uint32_t j, const uint8_t **key, uint16_t *key_len) {
  assert(tree_cursor_valid(c));
  const typeof(c->path[0]) *p = &c->path[c->depth - 1];
  uint32_t left = reverse ? p->idx : p->h.nslots - 1 - p->idx; /* entries after the current one */
  uint32_t step = j <= left ? j : left;
  tree_entry e;
  if (leaf_entry(p->node, &p->h, reverse ? p->idx - step : p->idx + step, &e))
    e = c->cur; /* damaged: the cursor's own key bounds it */
  *key = e.key;
  *key_len = e.key_len;
  return j <= left;
}

static void grow(scan_readahead *ra) {
  if (ra->window < SCAN_RA_ENTRIES) ra->window *= 2;
}

/* Each slot is asked for once, a window ahead of the cursor, again once
 * fewer than half the window remain asked for (so that adjacent records
 * gather). The window starts small and doubles with each refill: a level's
 * cursor moves a short way in a short scan, and what it asked for past the
 * scan's end would be read for nothing. Then the next leaf, once the window
 * reaches the leaf's end. */
static void ask_window(scan_readahead *ra, const tree_cursor *c, int reverse) {
  const typeof(c->path[0]) *p = &c->path[c->depth - 1];
  if (!reverse && ra->asked < p->h.nslots && ra->asked <= p->idx + ra->window / 2) {
    uint32_t end = p->idx + 1 + ra->window < p->h.nslots ? p->idx + 1 + ra->window : p->h.nslots;
    for (; ra->asked < end; ra->asked++) ask_slot(ra, p->node, &p->h, ra->asked);
    grow(ra);
  } else if (reverse && ra->asked > 0 && ra->asked + ra->window / 2 >= p->idx) {
    uint32_t start = p->idx > ra->window ? p->idx - ra->window : 0;
    while (ra->asked > start) ask_slot(ra, p->node, &p->h, --ra->asked);
    grow(ra);
  }
  if (ra->asked == (reverse ? 0 : p->h.nslots) && !ra->sibling_asked) ask_sibling(ra, c);
}

void scan_readahead_step(scan_readahead *ra, const tree_cursor *c, int reverse) {
  assert(tree_cursor_valid(c));
  const typeof(c->path[0]) *p = &c->path[c->depth - 1];
  assert(p->h.height == 0 && p->idx < p->h.nslots);
  if (reverse != ra->reverse) { /* a turn: the span, if any, is over */
    ra->window = SCAN_RA_FIRST;
    ra->span_left = 0;
  }
  if (p->node != ra->leaf || reverse != ra->reverse) {
    ra->leaf = p->node;
    ra->reverse = reverse;
    ra->asked = reverse ? p->idx + 1 : p->idx; /* the current entry too: its read is next */
    ra->sibling_asked = 0;
    ra->spanning = 0;
    if (ra->span_left) {
      ask_span(ra, c);
      flush(ra);
      return;
    }
  }
  /* A merge step can move a cursor past many entries (shadowed versions,
   * tombstones, ranges deleted): what it passed is not wanted any more. */
  if (!reverse && ra->asked < p->idx) ra->asked = p->idx;
  if (reverse && ra->asked > p->idx + 1) ra->asked = p->idx + 1;
  /* Within a span, nothing past it until the cursor gets there: the caller
   * said it stops there. */
  if (ra->spanning && (reverse ? ra->asked > p->idx : ra->asked <= p->idx)) ra->spanning = 0;
  if (!ra->spanning) ask_window(ra, c, reverse);
  flush(ra);
}
