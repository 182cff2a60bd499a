/* Send index, the backup's side (Talos §4): a primary exports the device
 * levels its compactions built (repl/export.c); a backup installs them
 * without compacting.
 *
 * A backup copies each segment of a tree it lacks into a segment of its
 * own; an index node's child addresses are rewritten through the segment
 * map, primary segment -> backup segment, and its checksum recomputed.
 *
 * Values outside the leaves (hybrid placement) follow through a log map,
 * Talos's: a tree's transient medium-log segments are copied with it, and
 * the backup's large log mirrors the primary's, segment for segment at the
 * same offsets and incarnations. Apply writes most of the mirror as the log
 * arrives (repl/mirror.c); an install copies what apply did not. Copied log
 * records get their checksums seeded again with the backup's region id, and
 * each leaf pointer into a log is rewritten to the backup's segment. A run
 * (the segments holding one value too large for a segment) is listed in
 * the layout with its length and copied as it is, segment by segment, into
 * a run the install allocates; the commit reads it back whole, checks the
 * record and seeds its checksum again (reseed_run). A mirrored segment is copied
 * once, except the primary's heads, which grow: the next install copies
 * them again, in place (leaves installed before point into the copy). A
 * later copy of a head holds every record of an earlier one at the same
 * offset, so it is written only over an earlier one (its records end
 * further), under view_mu: a copy of an abandoned install that runs late
 * never takes records away, and a torn write leaves the records that were
 * there intact. Only the blocks records reach are written: a first copy
 * the blocks up to the end of its records, a copy again the blocks from the
 * end of the earlier one's, so that the mirror costs the bytes the
 * primary's large log holds, not a segment per head and install. Past its
 * records a mirrored segment keeps what the backup's segment held before,
 * which never parses as a record: a record's checksum is seeded with the
 * region id and the incarnation, and only this mirror writes records of
 * the backup's region with the primary's incarnations (a promoted backup's
 * own heads take later ones). A segment the primary's GC dropped
 * stays mirrored while the backup's log copy lacks the relocations that
 * moved its live values (the layout says up to which LSN they reach), so
 * that the leaves pointing into it stay readable after a promotion; a
 * pointer into a segment the backup never had (it joined after the drop)
 * points nowhere, and the backup is promoted only once its log holds those
 * relocations (repl_needs_lsn). The map of a whole tree is made (all its
 * backup segments allocated) before any segment is copied, so a parent can
 * be rewritten whether or not its children were copied yet; the tree
 * becomes reachable only through the catalog record of the commit, after
 * every segment is written and synced. A crash before that record leaves
 * the copied segments unreferenced, hence free at the next open.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "repl/layout.h"
#include "repl/repl.h"
#include "util/coding.h"
#include "util/crc32c.h"
#include "util/status.h"

typedef struct inst_tree {
  int level, slot;
  uint32_t id;
  uint64_t root;
  uint32_t height;
  uint64_t entries, bytes, medium_bytes;
  uint32_t nsegs, nmsegs;
  const uint8_t *segs, *msegs; /* the primary's, encoded, in the layout copy (MSEG_ENTRY each) */
  range_set rtombs;
  int held_at;         /* the backup holds it: its level * LEVEL_TREES + slot; -1: copy it */
} inst_tree;

enum { SEG_NODES, SEG_MEDIUM, SEG_LARGE };
#define NO_TREE UINT32_MAX /* a large-log segment's tree: the log is the region's */

/* One primary segment and where the backup keeps it. Sorted by (pseg,
 * tree, inc): a medium-log segment has an entry for each tree that points
 * into it, and a large-log segment the primary dropped and took again has
 * two incarnations. */
typedef struct seg_map {
  uint32_t pseg, tree, inc; /* inc: large-log segments only */
  uint32_t bseg;
  uint8_t kind;
  /* Not copied by this install, nor freed by it: large, the backup's mirror
   * already (copied again if in_place); medium, a copy the backup's levels
   * hold (set) or another tree's of this layout (shared). */
  uint8_t kept;
  uint8_t in_place;
  uint8_t open;    /* large: the primary's head at the export */
  uint8_t dropped; /* large: kept, though the primary dropped it */
  uint8_t copying; /* large: a new copy, in r->repl_copying until the close */
  int written;
  uint32_t used;    /* large: where its last record ends */
  /* Large: 1, or the length of the run holding one value too large for a
   * segment, which has an entry per segment (part: its place in the run;
   * bseg - part is the run's first). */
  uint32_t nsegs, part;
  uint64_t garbage; /* large: the primary's count */
  /* Medium: the uid of the primary's set holding pseg (0: not shared), and
   * the backup's set holding bseg: one its levels hold, referenced from
   * begin, or made for a new copy by install_view, from when the set owns
   * the segment. shared: the copy is another entry's (the same pseg and
   * uid, listed by another tree), whose set is this one's. */
  uint64_t uid;
  mseg_set *set;
  uint8_t shared;
} seg_map;

struct par_repl_install {
  par_region *r;
  uint8_t *layout;
  uint64_t covered;
  uint32_t ntrees;
  inst_tree t[MAX_TREES];
  uint32_t src_region, next_inc, nvlog;
  uint64_t dropped_lsn;
  const uint8_t *vlog; /* the layout's large-log entries */
  seg_map *map;
  uint32_t nmap;
  uint32_t *needed, nneeded; /* the distinct primary segments to copy */
  uint8_t *buf;
  uint8_t *padded; /* a segment sent shorter than SEG, with its zeros */
  int stale; /* a leaf points into a large-log segment the backup never had */
  uint64_t next_lsn; /* the backup's log copy at the begin: LSNs below it are there */
  int committed;
  /* The layout covers fewer LSNs than the backup's levels: installing it
   * would lose those between (the log copy no longer holds them). A new
   * primary, promoted with older levels than this backup's, sends such
   * layouts until it flushes; they change nothing. */
  int outdated;
};

static int map_cmp(const void *a, const void *b) {
  const seg_map *x = a, *y = b;
  if (x->pseg != y->pseg) return x->pseg < y->pseg ? -1 : 1;
  if (x->tree != y->tree) return x->tree < y->tree ? -1 : 1;
  return x->inc < y->inc ? -1 : x->inc > y->inc;
}

static seg_map *map_find(const par_repl_install *in, uint32_t pseg, uint32_t tree, uint32_t inc) {
  seg_map key = {.pseg = pseg, .tree = tree, .inc = inc};
  return bsearch(&key, in->map, in->nmap, sizeof *in->map, map_cmp);
}

static int bad_layout(const char *what) { return par_error(PAR_ECORRUPT, "shipped layout: %s", what); }

static int parse_layout(par_repl_install *in, size_t len) {
  const uint8_t *p = in->layout, *end = p + len;
  if (len < LAYOUT_HDR || dec32(p) != LAYOUT_MAGIC) return bad_layout("no layout header");
  in->covered = dec64(p + 4);
  in->ntrees = dec32(p + 12);
  in->src_region = dec32(p + 16);
  in->next_inc = dec32(p + 20);
  in->nvlog = dec32(p + 24);
  in->dropped_lsn = dec64(p + 28);
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
    t->nmsegs = dec32(p + 44);
    t->medium_bytes = dec64(p + 48);
    p += TREE_HDR;
    if (t->level < 1 || t->level > PAR_MAX_LEVELS || t->slot >= LEVEL_TREES || seen[t->level][t->slot]++)
      return bad_layout("a tree at no level or twice at one");
    /* Nodes under a root, or range tombstones alone. */
    int shape = t->root ? t->height >= 1 && t->height < NODE_MAX_HEIGHT && t->nsegs
                        : !t->height && !t->nsegs && !t->nmsegs && rlen;
    if (!t->id || !shape || t->nsegs > (size_t)(end - p) / 4 ||
        t->nmsegs > ((size_t)(end - p) - 4ull * t->nsegs) / MSEG_ENTRY)
      return bad_layout("a tree description out of range");
    size_t listed = 4ull * t->nsegs + (size_t)MSEG_ENTRY * t->nmsegs;
    if (rlen > (size_t)(end - p) - listed) return bad_layout("a tree description out of range");
    t->segs = p;
    t->msegs = p + 4ull * t->nsegs;
    int root_in = !t->root;
    for (uint32_t k = 0; k < t->nsegs; k++) root_in |= dec32(p + 4 * k) == t->root / SEG;
    if (!root_in) return bad_layout("a root outside its tree's segments");
    p += listed;
    if (rlen && range_set_decode(&t->rtombs, p, rlen)) return bad_layout("malformed range tombstones");
    p += rlen;
  }
  if (in->nvlog > (size_t)(end - p) / VLOG_ENTRY) return bad_layout("truncated large-log list");
  in->vlog = p;
  p += (size_t)VLOG_ENTRY * in->nvlog;
  for (uint32_t i = 0; i < in->nvlog; i++) {
    const uint8_t *v = in->vlog + VLOG_ENTRY * i;
    if (!dec32(v) || dec32(v + 4) == MEDIUM_INC || !dec32(v + 20) || dec32(v + 20) > MAX_RUN ||
        dec32(v) > UINT32_MAX - dec32(v + 20))
      return bad_layout("a large-log segment out of range");
  }
  return p == end ? PAR_OK : bad_layout("bytes after the large-log list");
}

/* Adds a map entry; a new one (not kept) gets a backup segment, unless it
 * is part of a run allocated already. */
static int map_add(par_repl_install *in, seg_map e) {
  if (!e.kept && !e.bseg) {
    int rc = segalloc_alloc(&in->r->vol->alloc, &e.bseg);
    if (rc) return rc;
  }
  in->map[in->nmap++] = e;
  return PAR_OK;
}

/* The backup's mirror of the primary's large-log segment of incarnation
 * inc, or NULL (view_mu held). */
static struct repl_mirror *mirror_find(par_region *r, uint32_t inc) {
  int k = repl_mirror_find(r, inc);
  return k < 0 ? NULL : &r->repl_mirror[k];
}

/* The large-log entries (view_mu held): the layout's list, each in the
 * backup's mirror segment when it has one, and the mirror's segments the
 * primary dropped since. A mirrored segment is copied again, in place, when
 * either copy is of a head, unless apply wrote every record of it up to a
 * log copy that holds the levels' LSNs (repl/mirror.c). A mirror newer than
 * the layout (apply started it after the export) is not the layout's. */
static int map_large(par_repl_install *in) {
  par_region *r = in->r;
  int rc = PAR_OK;
  for (uint32_t i = 0; i < in->nvlog && !rc; i++) {
    const uint8_t *v = in->vlog + VLOG_ENTRY * i;
    seg_map e = {.pseg = dec32(v), .tree = NO_TREE, .inc = dec32(v + 4), .kind = SEG_LARGE,
                 .garbage = dec64(v + 8), .open = dec32(v + 16) != 0, .nsegs = dec32(v + 20)};
    const struct repl_mirror *mm = mirror_find(r, e.inc);
    if (mm && mm->nsegs != e.nsegs) {
      rc = bad_layout("a run of another length than the mirror's");
    } else if (mm) {
      e.bseg = mm->bseg;
      e.kept = 1;
      e.in_place = e.nsegs == 1 && (mm->open || e.open) && !(mm->whole && in->next_lsn > in->covered);
      e.written = !e.in_place;
    } else {
      e.copying = 1;
      if (e.nsegs > 1) rc = segalloc_alloc_run(&r->vol->alloc, e.nsegs, &e.bseg);
    }
    if (!rc) rc = map_add(in, e);
    for (uint32_t k = 1; !rc && e.copying && k < e.nsegs; k++)
      rc = map_add(in, (seg_map){.pseg = e.pseg + k, .tree = NO_TREE, .inc = e.inc, .bseg = e.bseg + k,
                                 .kind = SEG_LARGE, .nsegs = e.nsegs, .part = k});
    if (!rc && e.copying && (rc = repl_copying_add(r, e.inc, e.bseg, e.nsegs))) in->map[in->nmap - e.nsegs].copying = 0;
  }
  for (uint32_t k = 0; k < r->nrepl_mirror && !rc; k++) {
    const struct repl_mirror *mm = &r->repl_mirror[k];
    if (mm->inc >= in->next_inc) continue;
    int listed = 0;
    for (uint32_t i = 0; i < in->nvlog && !listed; i++)
      listed = dec32(in->vlog + VLOG_ENTRY * i) == mm->pseg && dec32(in->vlog + VLOG_ENTRY * i + 4) == mm->inc;
    if (!listed)
      rc = map_add(in, (seg_map){.pseg = mm->pseg, .tree = NO_TREE, .inc = mm->inc, .bseg = mm->bseg,
                                 .kind = SEG_LARGE, .kept = 1, .dropped = 1, .written = 1, .garbage = mm->garbage,
                                 .nsegs = mm->nsegs});
  }
  return rc;
}

/* Sorts the map and lists the distinct primary segments to copy. Of the
 * layout's segments, one may appear more than once only as a medium-log
 * segment of several trees; a segment the primary dropped (kept in the
 * mirror) may since have been taken again for anything. */
static int map_finish(par_repl_install *in) {
  qsort(in->map, in->nmap, sizeof *in->map, map_cmp);
  in->needed = malloc((in->nmap ? in->nmap : 1) * sizeof *in->needed);
  if (!in->needed) return par_error(PAR_ENOMEM, "segment map");
  const seg_map *last = NULL; /* the previous entry of the layout's, not a dropped one */
  for (uint32_t i = 0; i < in->nmap; i++) {
    const seg_map *m = &in->map[i];
    if (m->dropped) continue;
    if (last && last->pseg == m->pseg && !(last->kind == SEG_MEDIUM && m->kind == SEG_MEDIUM))
      return bad_layout("a segment in two places");
    last = m;
    if (!m->written && !(in->nneeded && in->needed[in->nneeded - 1] == m->pseg)) in->needed[in->nneeded++] = m->pseg;
  }
  return PAR_OK;
}

static uint32_t mseg_at(const inst_tree *t, uint32_t k) { return dec32(t->msegs + MSEG_ENTRY * k); }

/* Whether tree i lists pseg among its first k medium-log segments. */
static int listed_before(const inst_tree *t, uint32_t k, uint32_t pseg) {
  for (uint32_t j = 0; j < k; j++)
    if (mseg_at(t, j) == pseg) return 1;
  return 0;
}

/* The set of view w's trees whose uid is uid, or NULL. */
static mseg_set *view_set(const view *w, uint64_t uid) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      for (uint32_t k = 0; w->tree[i][j] && k < w->tree[i][j]->nsets; k++)
        if (w->tree[i][j]->sets[k]->uid == uid) return w->tree[i][j]->sets[k];
  return NULL;
}

/* Adds tree i's entry for the primary's medium-log segment (pseg, uid)
 * (view_mu held). A copy the backup already has is shared, not made again:
 * another tree's of this layout, or one the backup's levels hold (the
 * primary's trees pass a flush's set down from merge to merge above the
 * medium merge level, and a backup copying it with every new tree wrote
 * it again at each install). */
static int map_medium(par_repl_install *in, uint32_t i, uint32_t pseg, uint64_t uid) {
  par_region *r = in->r;
  seg_map e = {.pseg = pseg, .tree = i, .kind = SEG_MEDIUM, .uid = uid};
  for (uint32_t k = 0; uid && k < in->nmap; k++) {
    const seg_map *o = &in->map[k];
    if (o->kind == SEG_MEDIUM && o->pseg == pseg && o->uid == uid && !o->shared) {
      e.bseg = o->bseg;
      e.kept = e.written = e.shared = 1;
      in->map[in->nmap++] = e;
      return PAR_OK;
    }
  }
  for (uint32_t k = 0; uid && k < r->nrepl_medium; k++) {
    const struct repl_medium *h = &r->repl_medium[k];
    mseg_set *set = h->pseg == pseg && h->puid == uid ? view_set(r->view, h->buid) : NULL;
    if (set) {
      assert(set->segs.n == 1 && set->segs.v[0] == h->bseg);
      mseg_set_ref(set);
      e.set = set;
      e.bseg = h->bseg;
      e.kept = e.written = 1;
      break;
    }
  }
  return map_add(in, e);
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
    uint64_t total = 0;
    for (uint32_t i = 0; i < in->nvlog; i++) total += dec32(in->vlog + VLOG_ENTRY * i + 20);
    for (uint32_t i = 0; i < in->ntrees; i++) total += (uint64_t)in->t[i].nsegs + in->t[i].nmsegs;
    pthread_mutex_lock(&r->write_mu);
    in->next_lsn = r->next_lsn;
    pthread_mutex_unlock(&r->write_mu);
    pthread_mutex_lock(&r->view_mu);
    total += r->nrepl_mirror;
    in->map = calloc(total ? total : 1, sizeof *in->map);
    if (!in->map) rc = par_error(PAR_ENOMEM, "segment map");
    if (!rc && r->repl_role != PAR_REPL_BACKUP_SEND_INDEX)
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
    if (!rc && !in->outdated) rc = map_large(in);
    for (uint32_t i = 0; !rc && !in->outdated && i < in->ntrees; i++) {
      const inst_tree *t = &in->t[i];
      for (uint32_t k = 0; t->held_at < 0 && k < t->nsegs && !rc; k++)
        rc = map_add(in, (seg_map){.pseg = dec32(t->segs + 4 * k), .tree = i, .kind = SEG_NODES});
      for (uint32_t k = 0; t->held_at < 0 && k < t->nmsegs && !rc; k++)
        if (!listed_before(t, k, mseg_at(t, k))) /* a set a merge's two sources shared */
          rc = map_medium(in, i, mseg_at(t, k), dec64(t->msegs + MSEG_ENTRY * k + 4));
    }
    pthread_mutex_unlock(&r->view_mu);
  }
  if (!rc) rc = map_finish(in);
  if (rc) {
    par_repl_install_close(in);
    return rc;
  }
  *out = in;
  return PAR_OK;
}

PAR_API size_t par_repl_install_needed(const par_repl_install *in, uint32_t *segs, size_t cap) {
  if (!in) return 0;
  for (uint32_t i = 0; segs && i < in->nneeded && i < cap; i++) segs[i] = in->needed[i];
  return in->nneeded;
}

/* A leaf's pointer into the primary's logs, made a pointer into the
 * backup's: a medium one into its tree's copy of the segment, a large one
 * into the mirror; a large one into a segment the backup never had points
 * nowhere (segment 0), and the install notes it (stale). */
static int rewrite_vptr(par_repl_install *in, const seg_map *m, int cat, uint8_t *at) {
  vptr p = vptr_decode(at);
  const seg_map *to = cat == CAT_MEDIUM ? map_find(in, p.seg, m->tree, 0) : map_find(in, p.seg, NO_TREE, p.inc);
  if (cat == CAT_MEDIUM && (!to || to->kind != SEG_MEDIUM || p.inc != MEDIUM_INC))
    return par_error(PAR_ECORRUPT, "shipped leaf at %u points outside its tree's medium log", m->pseg);
  if (to) {
    p.seg = to->bseg;
  } else {
    p.seg = 0;
    in->stale = 1;
  }
  vptr_encode(at, p);
  return PAR_OK;
}

/* Checks the node at off of segment m (its copy in b) and rewrites its
 * child addresses, or its leaf's pointers into the logs; *size is the
 * node's size. */
static int rewrite_node(par_repl_install *in, const seg_map *m, uint8_t *b, uint32_t off, uint32_t *size) {
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
      if (cat != CAT_MEDIUM && cat != CAT_LARGE) continue;
      tree_entry e;
      if ((rc = leaf_entry(node, &h, i, &e))) return rc;
      if (e.value_len != VPTR_SIZE)
        return par_error(PAR_ECORRUPT, "shipped leaf at %u:%u holds a malformed log pointer", m->pseg, off);
      if ((rc = rewrite_vptr(in, m, cat, node + (e.value - node)))) return rc;
      continue;
    }
    uint64_t child;
    const uint8_t *key;
    uint16_t kl;
    if ((rc = index_entry(node, &h, i, &child, &key, &kl))) return rc;
    const seg_map *cm = map_find(in, (uint32_t)(child / SEG), m->tree, 0);
    if (!cm || cm->kind != SEG_NODES)
      return par_error(PAR_ECORRUPT, "shipped node at %u:%u has a child outside its tree", m->pseg, off);
    enc64(node + dec32(node + NODE_HDR + 4 * i), seg_offset(cm->bseg) + child % SEG);
  }
  enc32(node, node_crc(node, *size));
  return PAR_OK;
}

/* A log segment's copy (large or medium): the primary's records (their
 * checksums seeded with the primary's region id) at their offsets, seeded
 * again with the backup's, and nothing else. The walk ends at the first
 * record that does not parse: the end of the records, one a head was
 * writing, or damage, after which the copy holds nothing (GC's walk looks
 * past damage by trying every later offset, which for every copied head
 * would cost a checksum attempt per byte of its unwritten tail). */
static void reseed_records(par_repl_install *in, seg_map *m, const uint8_t *data) {
  uint32_t inc = m->kind == SEG_MEDIUM ? MEDIUM_INC : m->inc;
  uint32_t from = vlog_seed(in->src_region, inc), to = vlog_seed(in->r->id, inc);
  memset(in->buf, 0, SEG);
  uint32_t off = 0;
  vlog_record rec;
  m->used = 0;
  while (vlog_next(data, &off, from, &rec) == PAR_OK) {
    uint8_t *dst = in->buf + off;
    memcpy(dst, data + off, rec.size);
    enc32(dst, crc32c(to, dst + 4, rec.size - 4));
    off += rec.size;
    m->used = off;
  }
}

/* The blocks of the copy in in->buf that bytes [from, to) reach, into the
 * mirror's segment bseg (see the top of the file). */
static int write_mirror(par_repl_install *in, uint32_t bseg, uint32_t from, uint32_t to) {
  assert(from <= to && to <= SEG);
  from -= from % PAR_BLOCK;
  to = ALIGN_UP(to, PAR_BLOCK);
  if (from == to) return PAR_OK;
  int rc = file_write(&in->r->vol->file, in->buf + from, to - from, seg_offset(bseg) + from);
  if (!rc) atomic_fetch_add(&in->r->repl_stats.mirror_bytes, to - from);
  if (!rc) atomic_fetch_add(&in->r->repl_stats.segment_bytes, to - from);
  return rc;
}

/* Whether apply wrote the record of the run m is part of into the run this
 * install reserved, which the mirror then took (view_mu held). */
static int run_taken(const par_repl_install *in, const seg_map *m) {
  const struct repl_mirror *mm = mirror_find(in->r, m->inc);
  return m->nsegs > 1 && mm && mm->bseg == m->bseg - m->part;
}

/* A part of a run, as the primary's file holds it (finish_runs checks and
 * reseeds the record once every part is in), unless the mirror took the
 * run: view_mu, under which apply writes a reserved run. */
static int write_run_part(par_repl_install *in, const seg_map *m, const uint8_t *data, size_t len) {
  par_region *r = in->r;
  uint32_t n = ALIGN_UP((uint32_t)len, PAR_BLOCK);
  memcpy(in->buf, data, n); /* data holds zeros from len to SEG */
  pthread_mutex_lock(&r->view_mu);
  int rc = PAR_OK;
  if (!run_taken(in, m) && !(rc = file_write(&r->vol->file, in->buf, n, seg_offset(m->bseg)))) {
    atomic_fetch_add(&r->repl_stats.mirror_bytes, n);
    atomic_fetch_add(&r->repl_stats.segment_bytes, n);
  }
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}

/* The record of a run the install copied, checked whole and its checksum
 * seeded again with the backup's region id: one read of the run (view_mu
 * held, so that apply does not write it meanwhile). */
static int reseed_run(par_repl_install *in, seg_map *m) {
  const par_file *f = &in->r->vol->file;
  uint8_t *b = in->buf;
  int rc = file_read_cached(f, b, SEG, seg_offset(m->bseg));
  if (rc) return rc;
  uint64_t size = (uint64_t)dec32(b + 4) + VLOG_HDR;
  uint32_t kl = 0, vl = 0;
  const uint8_t *q = get_varint32(b + VLOG_HDR, b + SEG, &kl);
  if (q) q = get_varint32(q, b + SEG, &vl);
  if (!q || size <= SEG || (size + SEG - 1) / SEG != m->nsegs || vlog_record_size(kl, vl) != size)
    return par_error(PAR_ECORRUPT, "shipped run at %u does not hold one record of %u segments", m->pseg, m->nsegs);
  uint32_t stored = dec32(b);
  uint32_t from = crc32c(vlog_seed(in->src_region, m->inc), b + 4, SEG - 4);
  uint32_t to = crc32c(vlog_seed(in->r->id, m->inc), b + 4, SEG - 4);
  for (uint32_t k = 1; k < m->nsegs && !rc; k++) {
    uint32_t n = size - (uint64_t)k * SEG < SEG ? (uint32_t)(size - (uint64_t)k * SEG) : SEG;
    if (!(rc = file_read_cached(f, b, n, seg_offset(m->bseg + k)))) {
      from = crc32c(from, b, n);
      to = crc32c(to, b, n);
    }
  }
  if (!rc && from != stored) rc = par_error(PAR_ECORRUPT, "shipped run at %u fails its checksum", m->pseg);
  if (!rc) rc = file_read_cached(f, b, PAR_BLOCK, seg_offset(m->bseg));
  if (!rc) {
    enc32(b, to);
    rc = file_write(&in->r->vol->file, b, PAR_BLOCK, seg_offset(m->bseg));
  }
  if (!rc) m->used = (uint32_t)size;
  return rc;
}

/* Every run the install copied, once all its parts are in. */
static int finish_runs(par_repl_install *in) {
  int rc = PAR_OK;
  for (uint32_t i = 0; i < in->nmap && !rc; i++) {
    seg_map *m = &in->map[i];
    if (m->kind != SEG_LARGE || m->nsegs == 1 || m->part || m->kept) continue;
    pthread_mutex_lock(&in->r->view_mu);
    if (!run_taken(in, m)) rc = reseed_run(in, m);
    pthread_mutex_unlock(&in->r->view_mu);
  }
  return rc;
}

/* A head's copy over the mirror's (see the top of the file). */
static int write_in_place(par_repl_install *in, const seg_map *m) {
  par_region *r = in->r;
  pthread_mutex_lock(&r->view_mu);
  int rc = repl_mirror_settle(r, 0); /* the file holds what apply put in the mirror */
  struct repl_mirror *mm = mirror_find(r, m->inc);
  if (!rc && (!mm || mm->bseg != m->bseg))
    rc = par_error(PAR_EBUSY, "the large log of region '%s' changed during the install", r->name);
  else if (!rc && m->used > mm->used && !(rc = write_mirror(in, m->bseg, mm->used, m->used))) {
    mm->used = m->used;
    free(mm->tail); /* apply reads the new one when it needs it */
    mm->tail = NULL;
    mm->whole = 0; /* records apply never saw */
  }
  pthread_mutex_unlock(&r->view_mu);
  return rc;
}

/* The blocks of a copied node or medium-log segment that hold its nodes or
 * records and the zeroed header a walk reads after the last (end: one past
 * it). The rest of the backup's segment, whatever an earlier use left
 * there, is never read: nodes and values are reached through pointers, and
 * a walk of the segment (the next export's install, after a promotion)
 * stops at that header. A tree's last segment and a medium set's are
 * mostly unused. */
static uint32_t copy_len(uint32_t end) {
  uint32_t len = ALIGN_UP(end, PAR_BLOCK);
  return len < SEG ? len : SEG;
}

/* Copies segment m (its data from the primary, SEG bytes): nodes
 * rewritten, records reseeded. */
static int copy_segment(par_repl_install *in, seg_map *m, const uint8_t *data) {
  int rc = PAR_OK;
  uint32_t end; /* see copy_len */
  if (m->kind == SEG_NODES) {
    memcpy(in->buf, data, SEG);
    uint32_t off = 0, size = 0;
    /* Nodes are packed from the start; a zero header marks the unused tail. */
    while (!rc && off + NODE_HDR <= SEG && dec16(in->buf + off + 4) != 0) {
      rc = rewrite_node(in, m, in->buf, off, &size);
      off += size;
    }
    end = off + NODE_HDR;
  } else {
    reseed_records(in, m, data);
    end = ALIGN_UP(m->used, PAR_BLOCK) + VLOG_HDR; /* a walk tries the next block too (vlog_next) */
  }
  if (rc) return rc;
  if (m->in_place) return write_in_place(in, m);
  if (m->kind == SEG_LARGE) return write_mirror(in, m->bseg, 0, m->used);
  if (!(rc = file_write(&in->r->vol->file, in->buf, copy_len(end), seg_offset(m->bseg))))
    atomic_fetch_add(&in->r->repl_stats.segment_bytes, copy_len(end));
  return rc;
}

PAR_API int par_repl_install_segment(par_repl_install *in, uint32_t seg, const void *data, size_t len) {
  if (!in || !data) return par_error(PAR_EINVAL, "par_repl_install_segment: NULL argument");
  if (in->committed) return par_error(PAR_EINVAL, "the install is committed");
  if (len > SEG) return par_error(PAR_EINVAL, "%zu bytes for a segment of %u", len, SEG);
  const size_t sent = len;
  if (len < SEG) { /* the rest reads as zeros */
    if (!in->padded && !(in->padded = malloc(SEG))) return par_error(PAR_ENOMEM, "install buffer");
    memcpy(in->padded, data, len);
    memset(in->padded + len, 0, SEG - len);
    data = in->padded;
  }
  uint32_t lo = 0, hi = in->nmap;
  while (lo < hi) { /* the first entry of seg */
    uint32_t mid = (lo + hi) / 2;
    if (in->map[mid].pseg < seg) lo = mid + 1;
    else hi = mid;
  }
  int rc = PAR_OK, copied = 0;
  for (seg_map *m = in->map + lo; !rc && m < in->map + in->nmap && m->pseg == seg; m++) {
    if (m->written) continue;
    rc = m->kind == SEG_LARGE && m->nsegs > 1 ? write_run_part(in, m, data, sent) : copy_segment(in, m, data);
    if (!rc) {
      m->written = 1;
      copied = 1;
      atomic_fetch_add(&in->r->repl_stats.segments, 1);
      if (m->kind == SEG_MEDIUM) atomic_fetch_add(&in->r->repl_stats.medium_segments, 1);
    }
  }
  if (!rc && !copied) return par_error(PAR_EINVAL, "segment %u is not one the install needs", seg);
  return rc;
}

typedef struct install_edit {
  par_region *r;
  const view *w;
  uint64_t covered;
  int restart; /* the log restarts after covered: every WAL segment goes */
  uint32_t next_inc;
  const vlog_seg *vlog; /* the backup's large log from now on */
  uint32_t nvlog;
  seg_list wal_freed, vlog_freed;
} install_edit;

static int seg_in_view(const view *w, uint32_t seg) {
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      const dtree *t = w->tree[i][j];
      for (uint32_t k = 0; t && k < t->d.segs.n; k++)
        if (t->d.segs.v[k] == seg) return 1;
      for (uint32_t k = 0; t && k < t->d.msegs.n; k++)
        if (t->d.msegs.v[k] == seg) return 1;
    }
  return 0;
}

/* The description's levels become the view's and its large log the
 * mirror's; the WAL is trimmed to the covered LSN, as a compaction's
 * commit does. */
static int edit_install(region_desc *d, void *arg, seg_list *freed) {
  install_edit *e = arg;
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) {
      tree_desc *t = &d->level[i][j];
      for (uint32_t k = 0; t->root && k < t->segs.n; k++)
        if (!seg_in_view(e->w, t->segs.v[k]) && seg_list_push(freed, t->segs.v[k])) return PAR_ENOMEM;
      for (uint32_t k = 0; k < t->msegs.n; k++)
        if (!seg_in_view(e->w, t->msegs.v[k]) && seg_list_push(freed, t->msegs.v[k])) return PAR_ENOMEM;
      tree_desc_free(t);
      if (e->w->tree[i][j] && tree_desc_copy(t, &e->w->tree[i][j]->d)) return PAR_ENOMEM;
    }
  for (uint32_t i = 0; i < d->nvlog; i++) {
    int stays = 0;
    for (uint32_t k = 0; k < e->nvlog && !stays; k++) stays = e->vlog[k].seg == d->vlog[i].seg;
    for (uint32_t k = 0; !stays && k < d->vlog[i].nsegs; k++)
      if (seg_list_push(freed, d->vlog[i].seg + k) || seg_list_push(&e->vlog_freed, d->vlog[i].seg + k))
        return PAR_ENOMEM;
  }
  d->nvlog = 0;
  for (uint32_t k = 0; k < e->nvlog; k++)
    if (region_desc_add_vlog(d, e->vlog[k])) return PAR_ENOMEM;
  if (e->next_inc > d->next_inc) d->next_inc = e->next_inc;
  if (e->covered > d->covered_lsn) d->covered_lsn = e->covered;
  return repl_trim_wal(e->r, d, e->restart, freed, &e->wal_freed);
}

/* The backup's set for tree i's medium entry e, with a reference for the
 * tree: the copy's owner entry's set, made at its first use (the set then
 * owns the segment: kept). */
static mseg_set *medium_set(par_repl_install *in, seg_map *e) {
  for (uint32_t k = 0; e->shared && k < in->nmap; k++) {
    seg_map *o = &in->map[k];
    if (o->kind == SEG_MEDIUM && o->pseg == e->pseg && o->uid == e->uid && !o->shared) e = o;
  }
  assert(!e->shared);
  if (!e->set) {
    seg_list l = {0};
    if (seg_list_push(&l, e->bseg)) return NULL;
    e->set = mseg_set_create(&in->r->vol->alloc, &l);
    if (!e->set) {
      seg_list_free(&l);
      return NULL;
    }
    e->kept = 1;
  }
  mseg_set_ref(e->set);
  return e->set;
}

/* A new tree of the install's: its description, with the backup's
 * segments, and a set for each medium-log segment (shared as the map
 * says). */
static dtree *install_tree(par_repl_install *in, uint32_t i, int *rc) {
  const inst_tree *t = &in->t[i];
  tree_desc d = {.root = 0, .height = t->height, .entries = t->entries, .bytes = t->bytes,
                 .medium_bytes = t->medium_bytes};
  mseg_set **sets = t->nmsegs ? calloc(t->nmsegs, sizeof *sets) : NULL;
  uint32_t nsets = 0;
  if (t->nmsegs && !sets) *rc = par_error(PAR_ENOMEM, "tree");
  if (t->root) {
    const seg_map *rm = map_find(in, (uint32_t)(t->root / SEG), i, 0);
    d.root = seg_offset(rm->bseg) + t->root % SEG;
  }
  for (uint32_t k = 0; k < t->nsegs && !*rc; k++)
    if (seg_list_push(&d.segs, map_find(in, dec32(t->segs + 4 * k), i, 0)->bseg)) *rc = par_error(PAR_ENOMEM, "tree");
  for (uint32_t k = 0; k < t->nmsegs && !*rc; k++) {
    if (listed_before(t, k, mseg_at(t, k))) continue;
    seg_map *e = map_find(in, mseg_at(t, k), i, 0);
    if (seg_list_push(&d.msegs, e->bseg) || !(sets[nsets] = medium_set(in, e))) *rc = par_error(PAR_ENOMEM, "tree");
    else nsets++;
  }
  if (!*rc) *rc = range_set_copy(&d.rtombs, &t->rtombs);
  dtree *dt = *rc ? NULL : dtree_create_shared(&in->r->vol->alloc, &d, sets, nsets);
  if (!dt) {
    for (uint32_t k = 0; k < nsets; k++) mseg_set_unref(sets[k]);
    tree_desc_free(&d);
    if (!*rc) *rc = par_error(PAR_ENOMEM, "tree");
  }
  free(sets);
  return dt;
}

/* Drops a view install_view made that did not become the region's: its
 * new trees are forgotten, not retired (their node segments stay the
 * install's to free). */
static void drop_install_view(par_repl_install *in, view *n) {
  for (uint32_t i = 0; i < in->ntrees; i++)
    if (in->t[i].held_at < 0 && n->tree[in->t[i].level][in->t[i].slot])
      dtree_forget(n->tree[in->t[i].level][in->t[i].slot]);
  view_unref(n);
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
    } else if (!(dt = install_tree(in, i, rc))) {
      break;
    }
    n->tree[t->level][t->slot] = dt;
  }
  if (*rc) {
    drop_install_view(in, n);
    return NULL;
  }
  return n;
}

/* The large-log entry of the map for incarnation inc (a run's first), or
 * NULL. */
static const seg_map *map_large_entry(const par_repl_install *in, uint32_t inc) {
  for (uint32_t i = 0; i < in->nmap; i++)
    if (in->map[i].kind == SEG_LARGE && in->map[i].inc == inc && !in->map[i].part) return &in->map[i];
  return NULL;
}

/* The mirror after the install (view_mu held): the layout's large log, the
 * dropped segments still kept — while the log copy, which goes up to
 * next_lsn - 1, lacks a relocation out of them — and the mirrors apply
 * started since the begin. Fills both the region's in-memory mirror (the
 * tails still the current entries') and the description's list; a kept
 * segment still has to be the backup's (an install committed meanwhile may
 * have let it go). */
static int mirror_after(par_repl_install *in, uint64_t next_lsn, struct repl_mirror **mirror, vlog_seg **list,
                        uint32_t *n) {
  par_region *r = in->r;
  size_t cap = (size_t)in->nmap + r->nrepl_mirror + 1;
  *mirror = calloc(cap, sizeof **mirror);
  *list = calloc(cap, sizeof **list);
  *n = 0;
  if (!*mirror || !*list) return par_error(PAR_ENOMEM, "large-log mirror");
  for (uint32_t k = 0; k < r->nrepl_mirror; k++) {
    const struct repl_mirror *mm = &r->repl_mirror[k];
    if (map_large_entry(in, mm->inc)) continue;
    (*mirror)[*n] = *mm;
    (*list)[(*n)++] = (vlog_seg){.seg = mm->bseg, .inc = mm->inc, .garbage = mm->garbage, .nsegs = mm->nsegs};
  }
  for (uint32_t i = 0; i < in->nmap; i++) {
    const seg_map *m = &in->map[i];
    if (m->kind != SEG_LARGE || m->part || (m->dropped && next_lsn > in->dropped_lsn)) continue;
    const struct repl_mirror *mm = mirror_find(r, m->inc);
    /* Apply starts no mirror while the install copies it, but for a run,
     * which it writes into the install's (run_taken). */
    assert(m->kept || !mm || mm->bseg == m->bseg);
    if ((m->kept || mm) && (!mm || mm->bseg != m->bseg))
      return par_error(PAR_EBUSY, "the large log of region '%s' changed during the install", r->name);
    uint32_t used = mm && mm->used > m->used ? mm->used : m->used;
    /* A head's unwritten tail: the primary counts it when it leaves the
     * head, this copy never will. A run is never a head (whatever a layout
     * says: its record is longer than a segment). */
    uint64_t garbage = m->garbage + (m->open && m->nsegs == 1 && used < SEG ? SEG - used : 0);
    uint64_t most = (uint64_t)SEG * m->nsegs;
    if (garbage > most) garbage = most;
    (*mirror)[*n] = (struct repl_mirror){.pseg = m->pseg, .inc = m->inc, .bseg = m->bseg, .used = used,
                                         .nsegs = m->nsegs, .garbage = m->garbage, .open = m->open,
                                         .dropped = m->dropped, .whole = mm ? mm->whole : 0,
                                         .tail = mm ? mm->tail : NULL};
    (*list)[(*n)++] = (vlog_seg){.seg = m->bseg, .inc = m->inc, .garbage = garbage, .nsegs = m->nsegs};
  }
  return PAR_OK;
}

/* The backup's copies of primary medium-log segments that view n's trees
 * hold, for the next install to share (view_mu held): this install's and
 * the region's earlier ones still in n. */
static int medium_after(par_repl_install *in, const view *n, struct repl_medium **out, uint32_t *nout) {
  par_region *r = in->r;
  *nout = 0;
  *out = malloc(((size_t)in->nmap + r->nrepl_medium + 1) * sizeof **out);
  if (!*out) return par_error(PAR_ENOMEM, "medium-log copies");
  for (uint32_t i = 0; i < in->nmap + r->nrepl_medium; i++) {
    struct repl_medium h;
    if (i < in->nmap) {
      const seg_map *m = &in->map[i];
      if (m->kind != SEG_MEDIUM || m->shared || !m->set || !m->uid) continue;
      h = (struct repl_medium){m->pseg, m->bseg, m->uid, m->set->uid};
    } else {
      h = r->repl_medium[i - in->nmap];
    }
    int listed = 0;
    for (uint32_t k = 0; k < *nout && !listed; k++) listed = (*out)[k].buid == h.buid;
    if (!listed && view_set(n, h.buid)) (*out)[(*nout)++] = h;
  }
  return PAR_OK;
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
  int rc = finish_runs(in);
  if (!rc && in->nneeded) rc = file_sync(&r->vol->file);
  if (rc) return rc;
  /* write_mu: no shipped record is applied while the log may restart. The
   * commit frees the WAL segments the levels cover: the records applied
   * without PAR_SYNC are written first (the WAL thread takes no write_mu, as
   * in a checkpoint's cut), so that no late write of it lands in a segment
   * given to something else. */
  pthread_mutex_lock(&r->write_mu);
  rc = wal_sync(&r->wal, r->next_lsn - 1);
  pthread_mutex_lock(&r->view_mu);
  if (r->repl_role != PAR_REPL_BACKUP_SEND_INDEX)
    rc = par_error(PAR_EINVAL, "region '%s' is not a send-index backup", r->name);
  /* The installed leaves may point at records apply put in the mirror: on
   * the disk before the catalog record, and the run's index goes with the
   * mirror's list. */
  if (!rc) rc = repl_mirror_settle(r, 1);
  for (uint32_t i = 0; !rc && i < in->ntrees; i++) {
    int at = in->t[i].held_at;
    if (at >= 0 && (!r->view->tree[at / LEVEL_TREES][at % LEVEL_TREES] ||
                    r->repl_tree_id[at / LEVEL_TREES][at % LEVEL_TREES] != in->t[i].id))
      rc = par_error(PAR_EBUSY, "the levels of region '%s' changed during the install", r->name);
  }
  /* A copy shared from the backup's levels is still theirs: the catalog
   * record of an install committed meanwhile may have let it go. */
  for (uint32_t i = 0; !rc && i < in->nmap; i++)
    if (in->map[i].kind == SEG_MEDIUM && in->map[i].set && !view_set(r->view, in->map[i].set->uid))
      rc = par_error(PAR_EBUSY, "the levels of region '%s' changed during the install", r->name);
  /* Levels covering LSNs the log copy never had: the log goes on after
   * them, in a new segment (replay needs LSNs to follow on in a segment).
   * The records applied up to the sync above are durable, and write_mu
   * keeps new ones out, so the WAL has nothing unwritten for the segments
   * the commit frees. */
  int restart = in->covered >= r->next_lsn;
  uint64_t next_lsn = restart ? in->covered + 1 : r->next_lsn;
  struct repl_mirror *mirror = NULL;
  vlog_seg *list = NULL;
  uint32_t nvlog = 0;
  if (!rc) rc = mirror_after(in, next_lsn, &mirror, &list, &nvlog);
  if (!rc && restart) rc = wal_restart(&r->wal);
  view *n = rc ? NULL : install_view(in, &rc);
  struct repl_medium *medium = NULL;
  uint32_t nmedium = 0;
  if (n) rc = medium_after(in, n, &medium, &nmedium);
  install_edit e = {r, n, in->covered, restart, in->next_inc, list, nvlog, {0}, {0}};
  if (!rc && n) rc = region_persist(r, edit_install, &e);
  if (rc && n) drop_install_view(in, n);
  if (!rc) {
    if (restart) wal_skip_to(&r->wal, in->covered);
    for (uint32_t i = 0; i < e.wal_freed.n; i++) segalloc_free(&r->vol->alloc, e.wal_freed.v[i]);
    /* No reader of a backup follows these: the region serves no reads
     * until promoted, and the levels that pointed into them are gone. */
    for (uint32_t i = 0; i < e.vlog_freed.n; i++) segalloc_free(&r->vol->alloc, e.vlog_freed.v[i]);
    if (e.vlog_freed.n) raise_lsn(&r->log_readable_from, in->covered + 1); /* once promoted */
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
    for (uint32_t k = 0; k < r->nrepl_mirror; k++) { /* the tails of the entries gone */
      int kept = 0;
      for (uint32_t i = 0; i < nvlog && !kept; i++) kept = mirror[i].tail == r->repl_mirror[k].tail;
      if (!kept) free(r->repl_mirror[k].tail);
    }
    free(r->repl_mirror);
    r->repl_mirror = mirror;
    r->nrepl_mirror = nvlog;
    mirror = NULL;
    free(r->repl_medium);
    r->repl_medium = medium;
    r->nrepl_medium = nmedium;
    medium = NULL;
    uint32_t inc = atomic_load(&r->next_inc);
    while (inc < in->next_inc && !atomic_compare_exchange_weak(&r->next_inc, &inc, in->next_inc)) {
    }
    if (in->stale && in->dropped_lsn > r->repl_needs_lsn) r->repl_needs_lsn = in->dropped_lsn;
    region_set_view(r, n); /* drops the region's reference to old */
    r->next_lsn = next_lsn;
    atomic_store(&r->last_lsn, in->covered); /* L0 is empty */
    for (uint32_t i = 0; i < in->ntrees; i++)
      if (in->t[i].held_at < 0) atomic_fetch_add(&r->repl_stats.trees, 1);
    in->committed = 1;
    pthread_cond_broadcast(&r->view_cv);
  }
  pthread_mutex_unlock(&r->view_mu);
  pthread_mutex_unlock(&r->write_mu);
  free(mirror);
  free(medium);
  free(list);
  seg_list_free(&e.wal_freed);
  seg_list_free(&e.vlog_freed);
  return rc;
}

PAR_API void par_repl_install_close(par_repl_install *in) {
  if (!in) return;
  pthread_mutex_lock(&in->r->view_mu);
  for (uint32_t i = 0; i < in->nmap; i++) {
    if (in->map[i].copying) repl_copying_remove(in->r, in->map[i].inc);
    if (run_taken(in, &in->map[i])) in->map[i].kept = 1; /* the mirror's now */
  }
  pthread_mutex_unlock(&in->r->view_mu);
  if (!in->committed)
    for (uint32_t i = 0; i < in->nmap; i++)
      if (!in->map[i].kept) segalloc_free(&in->r->vol->alloc, in->map[i].bseg);
  /* The install's reference to each medium set it took or made: a set made
   * for a copy the install did not commit frees it now. */
  for (uint32_t i = 0; i < in->nmap; i++)
    if (in->map[i].kind == SEG_MEDIUM && in->map[i].set && !in->map[i].shared) mseg_set_unref(in->map[i].set);
  for (uint32_t i = 0; i < in->ntrees; i++) range_set_free(&in->t[i].rtombs);
  free(in->map);
  free(in->needed);
  free(in->layout);
  free(in->buf);
  free(in->padded);
  free(in);
}
