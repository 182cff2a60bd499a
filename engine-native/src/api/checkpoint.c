/* Checkpoints: an online, consistent copy of a volume (or of some of its
 * regions) into another file, which opens as a volume of its own.
 *
 * The copy is the state a crash of the source at one moment would recover,
 * with every write acknowledged before that moment made durable first:
 *  1. the consistency point: under region_lock (no region half open or
 *     closed), txn_mu (no cross-region batch half applied) and every open
 *     region's write_mu, each region's last LSN is taken as its cut, and,
 *     under meta_mu, the catalog's descriptions of the chosen regions are
 *     copied and every segment they reference is pinned (segalloc_pin: a
 *     compaction or GC that drops one meanwhile frees it only at the end,
 *     so it is not reused while the copy reads it). No write or freeze
 *     runs, so the levels cover no LSN past the cut, and every WAL and
 *     large-log segment holding an LSN up to the cut is listed (a region
 *     whose log took a segment it has not listed yet is synced first,
 *     under its write_mu). Writers then go on.
 *  2. each open region's WAL is synced up to its cut (the large-log records
 *     it names are written first, as for any sync);
 *  3. the target's superblocks are replaced by an "incomplete" marker and
 *     synced: from here until step 5 a crash leaves a target that par_open
 *     refuses by name, never a torn mix of two checkpoints;
 *  4. each pinned segment is read from the source (2 MiB direct reads) and
 *     written where the target's segment differs (so a checkpoint into the
 *     target of an earlier one writes only the segments that changed);
 *     an open region's WAL segments are cut first (wal_cut: records past
 *     the cut are zeroed), so the copy holds no write later than step 1;
 *     then the target is synced;
 *  5. a redo stream holding the copied catalog is written into segments
 *     the copy leaves free, synced, and the superblock flipped to it
 *     (redolog_checkpoint on the target): the copy is valid from here.
 * Opening the target recovers it as after a crash: levels from the catalog,
 * L0 replayed from the WAL up to the cut. Writes made with PAR_NO_WAL that
 * no flush covered by step 1 are not in it (they exist only in L0). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/internal.h"
#include "util/status.h"

#define SEG ((uint64_t)PAR_SEGMENT_SIZE)

/* What step 1 captured: the chosen regions' descriptions and cuts, and the
 * segments they reference. */
typedef struct capture {
  catalog cat;        /* the copies of the chosen descriptions            */
  uint64_t *cut;      /* per cat.regions[i]: last LSN kept; 0: not open   */
  par_region **open;  /* per cat.regions[i]: the open region, or NULL     */
  seg_list segs;      /* every segment the descriptions reference         */
} capture;

static void capture_free(capture *c) {
  catalog_free(&c->cat);
  free(c->cut);
  free(c->open);
  seg_list_free(&c->segs);
}

static int chosen(const char *name, const char *const *names, size_t n) {
  if (!names) return 1;
  for (size_t i = 0; i < n; i++)
    if (strcmp(names[i], name) == 0) return 1;
  return 0;
}

static int push_seg(void *arg, uint32_t seg) { return seg_list_push(arg, seg); }

static int by_id(const void *a, const void *b) {
  uint32_t x = (*(par_region *const *)a)->id, y = (*(par_region *const *)b)->id;
  return (x > y) - (x < y);
}

/* Step 1 (meta_mu and every open region's write_mu held). */
static int capture_catalog(par_volume *v, par_region **open, uint32_t nopen, const char *const *names,
                           size_t nnames, capture *c) {
  for (size_t i = 0; i < nnames; i++)
    if (!catalog_find(&v->cat, names[i]))
      return par_error(PAR_ENOENT, "checkpoint: no region named '%s'", names[i]);
  c->cat.next_region_id = v->cat.next_region_id;
  c->cut = calloc(v->cat.n + 1, sizeof *c->cut);
  c->open = calloc(v->cat.n + 1, sizeof *c->open);
  if (!c->cut || !c->open) return par_error(PAR_ENOMEM, "checkpoint");
  int rc = PAR_OK;
  for (uint32_t i = 0; !rc && i < v->cat.n; i++) {
    const region_desc *src = v->cat.regions[i];
    if (!chosen(src->name, names, nnames)) continue;
    region_desc d;
    rc = region_desc_copy(&d, src);
    if (rc) break;
    rc = region_desc_for_each_seg(&d, push_seg, &c->segs);
    uint32_t k = c->cat.n;
    if (!rc) rc = catalog_set(&c->cat, &d);
    if (rc) {
      region_desc_free(&d);
      break;
    }
    for (uint32_t j = 0; j < nopen; j++)
      if (open[j]->id == d.id) {
        c->open[k] = open[j];
        c->cut[k] = open[j]->next_lsn - 1;
      }
  }
  return rc ? rc : segalloc_pin(&v->alloc, c->segs.v, c->segs.n);
}

/* Steps 1 and 2. */
static int capture_point(par_volume *v, const char *const *names, size_t nnames, capture *c) {
  pthread_rwlock_wrlock(&v->region_lock);
  pthread_mutex_lock(&v->txn_mu);
  pthread_mutex_lock(&v->meta_mu);
  uint32_t nopen = 0;
  for (par_region *r = v->open; r; r = r->next_open) nopen++;
  par_region **open = malloc((nopen + 1) * sizeof *open);
  nopen = 0;
  for (par_region *r = v->open; open && r; r = r->next_open) open[nopen++] = r;
  pthread_mutex_unlock(&v->meta_mu);
  int rc = open ? PAR_OK : par_error(PAR_ENOMEM, "checkpoint");
  if (!rc) {
    qsort(open, nopen, sizeof *open, by_id); /* write_mus nest in region id order */
    for (uint32_t i = 0; i < nopen; i++) pthread_mutex_lock(&open[i]->write_mu);
    /* A log lists a segment it took only before the first write that needs
     * it durable (log/wal.h, log/vlog.h): a region whose logs took one since
     * is synced first, so that the catalog copied below lists every segment
     * holding an LSN up to the cut. */
    for (uint32_t i = 0; !rc && i < nopen; i++)
      if (!region_logs_listed(open[i])) rc = wal_sync(&open[i]->wal, open[i]->next_lsn - 1);
    if (!rc) {
      pthread_mutex_lock(&v->meta_mu);
      rc = capture_catalog(v, open, nopen, names, nnames, c);
      pthread_mutex_unlock(&v->meta_mu);
    }
    for (uint32_t i = nopen; i-- > 0;) pthread_mutex_unlock(&open[i]->write_mu);
  }
  pthread_mutex_unlock(&v->txn_mu);
  int pinned = !rc;
  /* Step 2: writers run again; region_lock keeps the regions alive. */
  for (uint32_t i = 0; !rc && i < c->cat.n; i++)
    if (c->open[i] && c->cut[i]) rc = wal_sync(&c->open[i]->wal, c->cut[i]);
  pthread_rwlock_unlock(&v->region_lock);
  free(open);
  if (rc && pinned) segalloc_unpin(&v->alloc);
  return rc;
}

/* The target file: created if missing; refused if it is the source or
 * holds something other than a volume or an incomplete checkpoint. */
static int open_target(par_volume *v, const char *path, par_file *t) {
  struct stat src, dst;
  if (fstat(v->file.fd, &src) == 0 && stat(path, &dst) == 0 && src.st_dev == dst.st_dev &&
      src.st_ino == dst.st_ino)
    return par_error(PAR_EINVAL, "checkpoint target %s is the volume itself", path);
  int rc = file_open(t, path, 1, v->opts.use_direct_io, 0);
  if (rc) {
    char msg[512];
    snprintf(msg, sizeof msg, "%s", par_last_error());
    return par_error(rc, "checkpoint target: %s", msg);
  }
  int kind;
  rc = superblock_probe(t, &kind);
  if (!rc && kind == SB_FOREIGN)
    rc = par_error(PAR_EINVAL,
                   "checkpoint target %s is neither a Parallax volume nor an incomplete checkpoint: "
                   "refusing to overwrite it", path);
  if (rc) file_close(t);
  return rc;
}

static int is_cut_wal(const capture *c, uint32_t seg, uint32_t *region, const wal_seg **ws) {
  for (uint32_t i = 0; i < c->cat.n; i++) {
    const region_desc *d = c->cat.regions[i];
    for (uint32_t k = 0; c->open[i] && k < d->nwal; k++)
      if (d->wal[k].seg == seg) {
        *region = i;
        *ws = &d->wal[k];
        return 1;
      }
  }
  return 0;
}

/* Step 4: copies the segments that differ. */
static int copy_segments(par_volume *v, par_file *t, const capture *c, par_checkpoint_stats *st) {
  uint32_t last = 0;
  for (uint32_t i = 0; i < c->segs.n; i++)
    if (c->segs.v[i] > last) last = c->segs.v[i];
  int rc = file_grow(t, (last + 1) * SEG);
  uint8_t *src = file_buf_alloc(SEG), *dst = file_buf_alloc(SEG);
  if (!rc && (!src || !dst)) rc = par_error(PAR_ENOMEM, "checkpoint buffers");
  for (uint32_t i = 0; !rc && i < c->segs.n; i++) {
    uint32_t seg = c->segs.v[i], k;
    const wal_seg *ws;
    rc = file_read(&v->file, src, SEG, seg_offset(seg));
    if (rc) break;
    if (is_cut_wal(c, seg, &k, &ws)) wal_cut(src, c->cat.regions[k]->id, ws, c->cut[k]);
    rc = file_read(t, dst, SEG, seg_offset(seg));
    if (rc) break;
    st->bytes_read += 2 * SEG;
    if (memcmp(src, dst, SEG) == 0) continue;
    rc = file_write(t, src, SEG, seg_offset(seg));
    st->segments_copied++;
    st->bytes_copied += SEG;
  }
  free(src);
  free(dst);
  st->segments = c->segs.n;
  return rc ? rc : file_sync(t);
}

/* Step 5: the target's catalog and superblock. */
static int write_catalog(par_file *t, const capture *c, par_checkpoint_stats *st) {
  segalloc a;
  int rc = segalloc_init(&a, t);
  for (uint32_t i = 0; !rc && i < c->segs.n; i++) rc = segalloc_mark(&a, c->segs.v[i]);
  redolog log;
  memset(&log, 0, sizeof log);
  log.file = t;
  log.alloc = &a;
  if (!rc) rc = redolog_checkpoint(&log, &c->cat);
  st->bytes_copied += log.bytes + 2 * PAR_BLOCK;
  redolog_close(&log);
  segalloc_destroy(&a);
  return rc;
}

PAR_API int par_checkpoint(par_volume *v, const char *path, const char *const *regions, size_t nregions,
                           par_checkpoint_stats *stats) {
  if (!v || !path || (!regions && nregions))
    return par_error(PAR_EINVAL, "par_checkpoint: NULL volume, path or region names");
  for (size_t i = 0; i < nregions; i++)
    if (!regions[i]) return par_error(PAR_EINVAL, "par_checkpoint: NULL region name");
  par_checkpoint_stats st;
  memset(&st, 0, sizeof st);
  pthread_mutex_lock(&v->ckpt_mu);
  par_file t;
  int rc = open_target(v, path, &t);
  if (rc) {
    pthread_mutex_unlock(&v->ckpt_mu);
    return rc;
  }
  capture c;
  memset(&c, 0, sizeof c);
  rc = capture_point(v, nregions ? regions : NULL, nregions, &c);
  if (!rc) {
    rc = superblock_mark_incomplete(&t);
    st.bytes_copied += 2 * PAR_BLOCK;
    if (!rc) rc = copy_segments(v, &t, &c, &st);
    if (!rc) rc = write_catalog(&t, &c, &st);
    segalloc_unpin(&v->alloc);
  }
  capture_free(&c);
  file_close(&t);
  pthread_mutex_unlock(&v->ckpt_mu);
  if (!rc && stats) *stats = st;
  return rc;
}
