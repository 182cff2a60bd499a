/* Send index (Talos §4): a primary exports the device levels its
 * compactions built; a backup installs them without compacting.
 *
 * A backup copies each segment of a tree it lacks into a segment of its
 * own. Leaves are copied as they are (send-index mode keeps values in the
 * leaves, so a leaf holds no address); an index node's child addresses are
 * rewritten through the segment map, primary segment -> backup segment,
 * and its checksum recomputed. The map of a whole tree is made (all its
 * backup segments allocated) before any segment is copied, so a parent can
 * be rewritten whether or not its children were copied yet; the tree
 * becomes reachable only through the catalog record of the commit, after
 * every segment is written and synced. A crash before that record leaves
 * the copied segments unreferenced, hence free at the next open.
 *
 * Trees are known by an id the primary derives from the tree's description,
 * its root node's checksum and the number its tree object got when built or
 * loaded (dtree.uid): a backup that holds a tree of the layout (an earlier
 * install shipped it) keeps it instead of copying it again. The description
 * and root alone do not tell trees apart: rewriting the same keys with
 * values of the same size builds trees of one shape, and every other one
 * takes the same segment, so a backup kept an older tree for a newer one
 * and lost the writes between (test_rebuilt_tree_not_taken_as_held). The
 * id is 32 bits: two trees share one with odds of 2^-32 per comparison.
 *
 * A tree's range tombstones (format 4: a set of key ranges in its catalog
 * description, not in its nodes) travel in the layout after its segment
 * list; a tree of range tombstones alone has no root and no segments. */
#include <stdlib.h>
#include <string.h>

#include "repl/repl.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)
#define LAYOUT_MAGIC 0x594c5850u /* "PXLY" */
#define LAYOUT_HDR 16u           /* magic u32 | covered u64 | ntrees u32 */
/* level u8 | slot u8 | pad u16 | id u32 | root u64 | height u32 | entries u64 | bytes u64 |
 * nsegs u32 | rtombs_len u32, then nsegs x segment u32 and rtombs_len bytes of its range
 * tombstones (range_set_encode; 0 bytes: none). */
#define TREE_HDR 44u
#define MAX_TREES (PAR_MAX_LEVELS * LEVEL_TREES)

/* ---- export (primary) ---- */

struct par_repl_export {
  par_region *r;
  view *v;          /* keeps the trees and their segments alive */
  uint64_t covered; /* the LSN v's levels cover */
  uint8_t *layout;
  size_t len;
};

static uint32_t tree_id(const par_file *f, const dtree *dt) {
  const tree_desc *t = &dt->d;
  uint8_t b[36];
  enc64(b, t->root);
  enc32(b + 8, t->height);
  enc64(b + 12, t->entries);
  enc64(b + 20, t->bytes);
  enc64(b + 28, dt->uid);
  uint32_t c = crc32c(0, b, sizeof b);
  c = crc32c(c, (const uint8_t *)t->segs.v, t->segs.n * sizeof *t->segs.v);
  if (t->root) c = crc32c(c, file_map(f) + t->root, 4); /* the root node's own checksum */
  for (uint32_t i = 0; i < t->rtombs.n; i++) {
    c = crc32c(c, t->rtombs.v[i].begin, t->rtombs.v[i].begin_len);
    c = crc32c(c, t->rtombs.v[i].end, t->rtombs.v[i].end_len);
  }
  return c ? c : 1;
}

static size_t rtombs_len(const tree_desc *t) { return t->rtombs.n ? range_set_encoded_size(&t->rtombs) : 0; }

PAR_API int par_repl_export_open(par_region *r, par_repl_export **out) {
  if (!r || !out) return par_error(PAR_EINVAL, "par_repl_export_open: NULL argument");
  par_repl_export *x = calloc(1, sizeof *x);
  if (!x) return par_error(PAR_ENOMEM, "export");
  x->r = r;
  /* The catalog's covered LSN changes with the view under commit_mu (a
   * merge commit records the layout before it publishes the view). */
  pthread_mutex_lock(&r->commit_mu);
  pthread_mutex_lock(&r->view_mu);
  x->v = r->view;
  atomic_fetch_add(&x->v->refs, 1);
  pthread_mutex_lock(&r->vol->meta_mu);
  x->covered = catalog_find_id(&r->vol->cat, r->id)->covered_lsn;
  pthread_mutex_unlock(&r->vol->meta_mu);
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->commit_mu);
  int rc = PAR_OK;
  size_t len = LAYOUT_HDR;
  uint32_t n = 0;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = x->v->tree[i][j];
      if (!t) continue;
      if (t->d.msegs.n && !rc)
        rc = par_error(PAR_EINVAL, "level %d of region '%s' points into a transient medium log: send-index needs "
                       "PAR_PLACEMENT_IN_PLACE", i, r->name);
      len += TREE_HDR + 4ull * t->d.segs.n + rtombs_len(&t->d);
      n++;
    }
  x->layout = rc ? NULL : malloc(len);
  if (!rc && !x->layout) rc = par_error(PAR_ENOMEM, "layout");
  if (rc) {
    par_repl_export_close(x);
    return rc;
  }
  uint8_t *p = x->layout;
  enc32(p, LAYOUT_MAGIC);
  enc64(p + 4, x->covered);
  enc32(p + 12, n);
  p += LAYOUT_HDR;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = x->v->tree[i][j];
      if (!t) continue;
      p[0] = (uint8_t)i;
      p[1] = (uint8_t)j;
      enc16(p + 2, 0);
      enc32(p + 4, tree_id(&r->vol->file, t));
      enc64(p + 8, t->d.root);
      enc32(p + 16, t->d.height);
      enc64(p + 20, t->d.entries);
      enc64(p + 28, t->d.bytes);
      enc32(p + 36, t->d.segs.n);
      enc32(p + 40, (uint32_t)rtombs_len(&t->d));
      p += TREE_HDR;
      for (uint32_t k = 0; k < t->d.segs.n; k++, p += 4) enc32(p, t->d.segs.v[k]);
      if (t->d.rtombs.n) p = range_set_encode(&t->d.rtombs, p);
    }
  x->len = len;
  *out = x;
  return PAR_OK;
}

PAR_API int par_repl_export_layout(par_repl_export *x, void *buf, size_t cap, size_t *len) {
  if (!x || !len || (!buf && cap)) return par_error(PAR_EINVAL, "par_repl_export_layout: NULL argument");
  *len = x->len;
  if (cap < x->len) return par_error(PAR_ETOOBIG, "the layout needs %zu bytes", x->len);
  memcpy(buf, x->layout, x->len);
  return PAR_OK;
}

PAR_API uint64_t par_repl_export_covered(const par_repl_export *x) { return x ? x->covered : 0; }

PAR_API int par_repl_export_segment(par_repl_export *x, uint32_t seg, void *buf) {
  if (!x || !buf) return par_error(PAR_EINVAL, "par_repl_export_segment: NULL argument");
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = x->v->tree[i][j];
      for (uint32_t k = 0; t && k < t->d.segs.n; k++)
        /* One read of the whole segment through the page cache, not a copy
         * from the map: trees are written with direct I/O, so their pages
         * are not cached, and the map is MADV_RANDOM, so a copy faulted
         * them in a page (one device read) at a time. The read also leaves
         * the segment cached for the next backup's export. */
        if (t->d.segs.v[k] == seg) return file_read_cached(&x->r->vol->file, buf, SEG, seg_offset(seg));
    }
  return par_error(PAR_EINVAL, "segment %u is not in the exported levels", seg);
}

PAR_API void par_repl_export_close(par_repl_export *x) {
  if (!x) return;
  if (x->v) view_unref(x->v);
  free(x->layout);
  free(x);
}

/* ---- install (backup) ---- */

typedef struct inst_tree {
  int level, slot;
  uint32_t id;
  uint64_t root;
  uint32_t height;
  uint64_t entries, bytes;
  uint32_t nsegs;
  const uint8_t *segs; /* the primary's, encoded, in the layout copy */
  range_set rtombs;
  int held_at;         /* the backup holds it: its level * LEVEL_TREES + slot; -1: copy it */
} inst_tree;

typedef struct seg_map {
  uint32_t pseg, bseg;
  uint32_t tree; /* index into trees */
  int written;
} seg_map;

struct par_repl_install {
  par_region *r;
  uint8_t *layout;
  uint64_t covered;
  uint32_t ntrees;
  inst_tree t[MAX_TREES];
  seg_map *map; /* sorted by pseg */
  uint32_t nmap;
  uint8_t *buf;
  int committed;
  /* The layout covers fewer LSNs than the backup's levels: installing it
   * would lose those between (the log copy no longer holds them). A new
   * primary, promoted with older levels than this backup's, sends such
   * layouts until it flushes; they change nothing. */
  int outdated;
};

static int map_cmp(const void *a, const void *b) {
  uint32_t x = ((const seg_map *)a)->pseg, y = ((const seg_map *)b)->pseg;
  return x < y ? -1 : x > y;
}

static seg_map *map_find(const par_repl_install *in, uint32_t pseg) {
  seg_map key = {.pseg = pseg};
  return bsearch(&key, in->map, in->nmap, sizeof *in->map, map_cmp);
}

static int bad_layout(const char *what) { return par_error(PAR_ECORRUPT, "shipped layout: %s", what); }

static int parse_layout(par_repl_install *in, size_t len) {
  const uint8_t *p = in->layout, *end = p + len;
  if (len < LAYOUT_HDR || dec32(p) != LAYOUT_MAGIC) return bad_layout("no layout header");
  in->covered = dec64(p + 4);
  in->ntrees = dec32(p + 12);
  if (in->ntrees > MAX_TREES) return bad_layout("too many trees");
  p += LAYOUT_HDR;
  int seen[PAR_MAX_LEVELS + 1][LEVEL_TREES] = {{0}};
  for (uint32_t i = 0; i < in->ntrees; i++) {
    inst_tree *t = &in->t[i];
    if ((size_t)(end - p) < TREE_HDR) return bad_layout("truncated tree");
    t->level = p[0];
    t->slot = p[1];
    t->id = dec32(p + 4);
    t->root = dec64(p + 8);
    t->height = dec32(p + 16);
    t->entries = dec64(p + 20);
    t->bytes = dec64(p + 28);
    t->nsegs = dec32(p + 36);
    uint32_t rlen = dec32(p + 40);
    p += TREE_HDR;
    if (t->level < 1 || t->level > PAR_MAX_LEVELS || t->slot >= LEVEL_TREES || seen[t->level][t->slot]++)
      return bad_layout("a tree at no level or twice at one");
    /* Nodes under a root, or range tombstones alone. */
    int shape = t->root ? t->height >= 1 && t->height < NODE_MAX_HEIGHT && t->nsegs : !t->height && !t->nsegs && rlen;
    if (!t->id || !shape || t->nsegs > (size_t)(end - p) / 4 || rlen > (size_t)(end - p) - 4ull * t->nsegs)
      return bad_layout("a tree description out of range");
    t->segs = p;
    int root_in = !t->root;
    for (uint32_t k = 0; k < t->nsegs; k++) root_in |= dec32(p + 4 * k) == t->root / SEG;
    if (!root_in) return bad_layout("a root outside its tree's segments");
    p += 4ull * t->nsegs;
    if (rlen && range_set_decode(&t->rtombs, p, rlen)) return bad_layout("malformed range tombstones");
    p += rlen;
  }
  return p == end ? PAR_OK : bad_layout("bytes after the last tree");
}

PAR_API int par_repl_install_begin(par_region *r, const void *layout, size_t len,
                                   par_repl_install **out) {
  if (!r || !layout || !out) return par_error(PAR_EINVAL, "par_repl_install_begin: NULL argument");
  *out = NULL;
  par_repl_install *in = calloc(1, sizeof *in);
  if (!in) return par_error(PAR_ENOMEM, "install");
  in->r = r;
  in->layout = malloc(len ? len : 1);
  in->buf = file_buf_alloc(SEG);
  int rc = in->layout && in->buf ? PAR_OK : par_error(PAR_ENOMEM, "install buffers");
  if (!rc) {
    memcpy(in->layout, layout, len);
    rc = parse_layout(in, len);
  }
  if (!rc) {
    pthread_mutex_lock(&r->view_mu);
    if (r->repl_role != PAR_REPL_BACKUP_SEND_INDEX)
      rc = par_error(PAR_EINVAL, "region '%s' is not a send-index backup", r->name);
    for (uint32_t i = 0; i < in->ntrees; i++) {
      in->t[i].held_at = -1;
      for (int l = 1; l <= PAR_MAX_LEVELS; l++)
        for (int s = 0; s < LEVEL_TREES; s++)
          if (r->view->tree[l][s] && r->repl_tree_id[l][s] == in->t[i].id) in->t[i].held_at = l * LEVEL_TREES + s;
    }
    /* The covered LSN changes with the view, both under view_mu. */
    pthread_mutex_lock(&r->vol->meta_mu);
    in->outdated = in->covered < catalog_find_id(&r->vol->cat, r->id)->covered_lsn;
    pthread_mutex_unlock(&r->vol->meta_mu);
    pthread_mutex_unlock(&r->view_mu);
  }
  uint32_t total = 0;
  for (uint32_t i = 0; !rc && i < in->ntrees; i++) total += in->t[i].held_at < 0 ? in->t[i].nsegs : 0;
  in->map = rc ? NULL : calloc(total ? total : 1, sizeof *in->map);
  if (!rc && !in->map) rc = par_error(PAR_ENOMEM, "segment map");
  for (uint32_t i = 0; !rc && !in->outdated && i < in->ntrees; i++)
    for (uint32_t k = 0; in->t[i].held_at < 0 && k < in->t[i].nsegs && !rc; k++) {
      seg_map *m = &in->map[in->nmap];
      m->pseg = dec32(in->t[i].segs + 4 * k);
      m->tree = i;
      if (!(rc = segalloc_alloc(&r->vol->alloc, &m->bseg))) in->nmap++;
    }
  if (!rc) {
    qsort(in->map, in->nmap, sizeof *in->map, map_cmp);
    for (uint32_t i = 1; i < in->nmap && !rc; i++)
      if (in->map[i].pseg == in->map[i - 1].pseg) rc = bad_layout("a segment in two places");
  }
  if (rc) {
    par_repl_install_close(in);
    return rc;
  }
  *out = in;
  return PAR_OK;
}

PAR_API size_t par_repl_install_needed(const par_repl_install *in, uint32_t *segs, size_t cap) {
  if (!in) return 0;
  for (uint32_t i = 0; segs && i < in->nmap && i < cap; i++) segs[i] = in->map[i].pseg;
  return in->nmap;
}

/* Checks the node at off of segment m (its copy in b) and rewrites its
 * child addresses; *size is the node's size. */
static int rewrite_node(const par_repl_install *in, const seg_map *m, uint8_t *b, uint32_t off, uint32_t *size) {
  uint8_t *node = b + off;
  node_hdr h;
  int rc = node_header(node, seg_offset(m->pseg) + off, &h);
  if (rc) return rc;
  *size = h.pages * PAR_BLOCK;
  if (dec32(node) != node_crc(node, *size))
    return par_error(PAR_ECORRUPT, "shipped node at %u:%u fails its checksum", m->pseg, off);
  for (uint32_t i = 0; i < h.nslots; i++) {
    if (h.type == NODE_LEAF) {
      int cat = (int)SLOT_CAT(dec32(node + NODE_HDR + 4 * i));
      if (cat != CAT_INLINE && cat != CAT_TOMBSTONE)
        return par_error(PAR_EINVAL, "a shipped leaf points into the primary's logs: send-index needs "
                         "PAR_PLACEMENT_IN_PLACE and values up to PAR_MAX_INLINE_VALUE");
      continue;
    }
    uint64_t child;
    const uint8_t *key;
    uint16_t kl;
    if ((rc = index_entry(node, &h, i, &child, &key, &kl))) return rc;
    const seg_map *cm = map_find(in, (uint32_t)(child / SEG));
    if (!cm || cm->tree != m->tree)
      return par_error(PAR_ECORRUPT, "shipped node at %u:%u has a child outside its tree", m->pseg, off);
    enc64(node + dec32(node + NODE_HDR + 4 * i), seg_offset(cm->bseg) + child % SEG);
  }
  enc32(node, node_crc(node, *size));
  return PAR_OK;
}

PAR_API int par_repl_install_segment(par_repl_install *in, uint32_t seg, const void *data) {
  if (!in || !data) return par_error(PAR_EINVAL, "par_repl_install_segment: NULL argument");
  if (in->committed) return par_error(PAR_EINVAL, "the install is committed");
  seg_map *m = map_find(in, seg);
  if (!m) return par_error(PAR_EINVAL, "segment %u is not one the install needs", seg);
  memcpy(in->buf, data, SEG);
  uint32_t off = 0, size = 0;
  int rc = PAR_OK;
  /* Nodes are packed from the start; a zero header marks the unused tail. */
  while (!rc && off + NODE_HDR <= SEG && dec16(in->buf + off + 4) != 0) {
    rc = rewrite_node(in, m, in->buf, off, &size);
    off += size;
  }
  if (!rc) rc = file_write(&in->r->vol->file, in->buf, SEG, seg_offset(m->bseg));
  if (!rc) {
    m->written = 1;
    atomic_fetch_add(&in->r->repl_stats.segments, 1);
  }
  return rc;
}

typedef struct install_edit {
  par_region *r;
  const view *w;
  uint64_t covered;
  int restart; /* the log restarts after covered: every WAL segment goes */
  seg_list wal_freed;
} install_edit;

static int seg_in_view(const view *w, uint32_t seg) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      for (uint32_t k = 0; w->tree[i][j] && k < w->tree[i][j]->d.segs.n; k++)
        if (w->tree[i][j]->d.segs.v[k] == seg) return 1;
  return 0;
}

/* The description's levels become the view's; the WAL is trimmed to the
 * covered LSN, as a compaction's commit does. */
static int edit_install(region_desc *d, void *arg, seg_list *freed) {
  install_edit *e = arg;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      tree_desc *t = &d->level[i][j];
      for (uint32_t k = 0; t->root && k < t->segs.n; k++)
        if (!seg_in_view(e->w, t->segs.v[k]) && seg_list_push(freed, t->segs.v[k])) return PAR_ENOMEM;
      tree_desc_free(t);
      if (e->w->tree[i][j] && tree_desc_copy(t, &e->w->tree[i][j]->d)) return PAR_ENOMEM;
    }
  if (e->covered > d->covered_lsn) d->covered_lsn = e->covered;
  return repl_trim_wal(e->r, d, e->restart, freed, &e->wal_freed);
}

/* The view the install makes: the layout's trees (held ones kept, copied
 * ones new) and an empty L0 — entries L0 may hold (replayed at an open)
 * are older than the levels' newest and must not shadow them. */
static view *install_view(par_repl_install *in, int *rc) {
  par_region *r = in->r;
  view *n = view_create(r);
  if (n) n->active = memtable_create();
  if (n && n->active) memtable_set_budget(n->active, &r->vol->budget);
  if (!n || !n->active) {
    view_unref(n);
    *rc = par_error(PAR_ENOMEM, "view");
    return NULL;
  }
  for (uint32_t i = 0; i < in->ntrees && !*rc; i++) {
    inst_tree *t = &in->t[i];
    dtree *dt;
    if (t->held_at >= 0) {
      dt = r->view->tree[t->held_at / LEVEL_TREES][t->held_at % LEVEL_TREES];
      dtree_ref(dt);
    } else {
      tree_desc d = {.root = 0, .height = t->height, .entries = t->entries, .bytes = t->bytes};
      if (t->root) {
        const seg_map *rm = map_find(in, (uint32_t)(t->root / SEG));
        d.root = seg_offset(rm->bseg) + t->root % SEG;
      }
      for (uint32_t k = 0; k < t->nsegs && !*rc; k++)
        if (seg_list_push(&d.segs, map_find(in, dec32(t->segs + 4 * k))->bseg)) *rc = par_error(PAR_ENOMEM, "tree");
      if (!*rc) *rc = range_set_copy(&d.rtombs, &t->rtombs);
      dt = *rc ? NULL : dtree_create(&r->vol->alloc, &d);
      if (!dt) {
        tree_desc_free(&d);
        if (!*rc) *rc = par_error(PAR_ENOMEM, "tree");
        break;
      }
    }
    n->tree[t->level][t->slot] = dt;
  }
  if (*rc) {
    view_unref(n); /* new trees are not retired: their segments stay the install's to free */
    return NULL;
  }
  return n;
}

PAR_API int par_repl_install_commit(par_repl_install *in) {
  if (!in) return par_error(PAR_EINVAL, "par_repl_install_commit: NULL argument");
  if (in->committed) return PAR_OK;
  par_region *r = in->r;
  for (uint32_t i = 0; i < in->nmap; i++)
    if (!in->map[i].written) return par_error(PAR_EINVAL, "segment %u was not shipped", in->map[i].pseg);
  if (in->outdated) { /* nothing to install (see outdated) */
    in->committed = 1;
    return PAR_OK;
  }
  int rc = in->nmap ? file_sync(&r->vol->file) : PAR_OK;
  if (rc) return rc;
  /* write_mu: no shipped record is applied while the log may restart. */
  pthread_mutex_lock(&r->write_mu);
  pthread_mutex_lock(&r->view_mu);
  if (r->repl_role != PAR_REPL_BACKUP_SEND_INDEX)
    rc = par_error(PAR_EINVAL, "region '%s' is not a send-index backup", r->name);
  for (uint32_t i = 0; !rc && i < in->ntrees; i++) {
    int at = in->t[i].held_at;
    if (at >= 0 && (!r->view->tree[at / LEVEL_TREES][at % LEVEL_TREES] ||
                    r->repl_tree_id[at / LEVEL_TREES][at % LEVEL_TREES] != in->t[i].id))
      rc = par_error(PAR_EBUSY, "the levels of region '%s' changed during the install", r->name);
  }
  /* Levels covering LSNs the log copy never had: the log goes on after
   * them, in a new segment (replay needs LSNs to follow on in a segment).
   * Every applied record is durable (par_repl_apply syncs) and write_mu
   * keeps new ones out, so the WAL has nothing unwritten for the segments
   * the commit frees. */
  int restart = in->covered >= r->next_lsn;
  if (!rc && restart) rc = wal_restart(&r->wal);
  view *n = rc ? NULL : install_view(in, &rc);
  install_edit e = {r, n, in->covered, restart, {0}};
  if (n) rc = region_persist(r, edit_install, &e);
  if (rc && n) view_unref(n);
  if (!rc) {
    if (restart) wal_skip_to(&r->wal, in->covered);
    for (uint32_t i = 0; i < e.wal_freed.n; i++) segalloc_free(&r->vol->alloc, e.wal_freed.v[i]);
    view *old = r->view;
    for (int i = 1; i <= PAR_MAX_LEVELS; i++)
      for (int j = 0; j < LEVEL_TREES; j++) {
        dtree *t = old->tree[i][j];
        int kept = 0;
        for (int a = 1; t && a <= PAR_MAX_LEVELS; a++)
          for (int b = 0; b < LEVEL_TREES; b++) kept |= n->tree[a][b] == t;
        if (t && !kept) dtree_retire(t);
      }
    uint32_t ids[PAR_MAX_LEVELS + 1][LEVEL_TREES] = {{0}};
    for (uint32_t i = 0; i < in->ntrees; i++) ids[in->t[i].level][in->t[i].slot] = in->t[i].id;
    memcpy(r->repl_tree_id, ids, sizeof ids);
    region_set_view(r, n); /* drops the region's reference to old */
    if (in->covered >= r->next_lsn) r->next_lsn = in->covered + 1;
    atomic_store(&r->last_lsn, in->covered); /* L0 is empty */
    for (uint32_t i = 0; i < in->ntrees; i++)
      if (in->t[i].held_at < 0) atomic_fetch_add(&r->repl_stats.trees, 1);
    in->committed = 1;
    pthread_cond_broadcast(&r->view_cv);
  }
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->write_mu);
  seg_list_free(&e.wal_freed);
  return rc;
}

PAR_API void par_repl_install_close(par_repl_install *in) {
  if (!in) return;
  if (!in->committed)
    for (uint32_t i = 0; i < in->nmap; i++) segalloc_free(&in->r->vol->alloc, in->map[i].bseg);
  for (uint32_t i = 0; i < in->ntrees; i++) range_set_free(&in->t[i].rtombs);
  free(in->map);
  free(in->layout);
  free(in->buf);
  free(in);
}
