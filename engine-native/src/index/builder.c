#include "index/builder.h"

#include <stdlib.h>
#include <string.h>

#include "log/vlog.h"
#include "util/coding.h"
#include "util/status.h"

#define SEG ((uint32_t)PAR_SEGMENT_SIZE)

static void node_reset(build_level *l, int height) {
  memset(l->buf, 0, NODE_HDR);
  enc16(l->buf + 4, height ? NODE_INDEX : NODE_LEAF);
  enc16(l->buf + 6, (uint16_t)height);
  l->nslots = 0;
  l->data_start = l->size;
}

int builder_init(tree_builder *b, par_file *f, segalloc *a) {
  memset(b, 0, sizeof *b);
  b->file = f;
  b->alloc = a;
  b->seg_buf = file_buf_alloc(SEG);
  if (!b->seg_buf) return par_error(PAR_ENOMEM, "compaction segment buffer");
  b->levels = 1;
  b->lvl[0].size = LEAF_SIZE;
  b->lvl[0].buf = malloc(LEAF_SIZE);
  if (!b->lvl[0].buf) {
    free(b->seg_buf);
    return par_error(PAR_ENOMEM, "leaf buffer");
  }
  node_reset(&b->lvl[0], 0);
  return PAR_OK;
}

static void free_buffers(tree_builder *b) {
  free(b->seg_buf);
  free(b->mbuf);
  free(b->jumbo);
  for (int i = 0; i < NODE_MAX_HEIGHT; i++) free(b->lvl[i].buf);
}

void builder_abort(tree_builder *b) {
  for (uint32_t i = 0; i < b->out.segs.n; i++) segalloc_free(b->alloc, b->out.segs.v[i]);
  for (uint32_t i = 0; i < b->out.msegs.n; i++) segalloc_free(b->alloc, b->out.msegs.v[i]);
  tree_desc_free(&b->out);
  free_buffers(b);
  memset(b, 0, sizeof *b);
}

/* Through the page cache unless b->direct: the next merge into this level
 * reads the tree back (index/tree.c, tree_stream), and gets read its
 * leaves, from memory while the tree is still there. At 5 M records under
 * a 1 GiB cgroup this cut a load's device bytes by 18-33%
 * (docs/benchmarks.md, "Where Load A's bytes go"). Writeback starts at
 * once; builder_finish's fdatasync makes the tree durable before its
 * commit. */
static int write_segment(tree_builder *b) {
  memset(b->seg_buf + b->fill, 0, SEG - b->fill);
  uint64_t at = seg_offset(b->seg);
  int rc = b->direct ? file_write(b->file, b->seg_buf, SEG, at) : file_write_cached(b->file, b->seg_buf, SEG, at);
  if (!rc && !b->direct) file_start_writeback(b->file, at, SEG);
  b->seg = 0;
  b->fill = 0;
  return rc;
}

static int add_index(tree_builder *b, int h, const void *key, uint16_t key_len, uint64_t child);

/* Places the node (size bytes at node) in the segment buffer and passes its
 * first key up to level h + 1: for a leaf, the whole key kept in
 * first_key, since the leaf may hold only its prefix. */
static int emit(tree_builder *b, int h, uint8_t *node, uint32_t size, uint32_t nslots,
                uint32_t data_start) {
  uint32_t pages = size / PAR_BLOCK;
  enc32(node + 8, pages);
  enc32(node + 12, nslots);
  enc32(node + 16, data_start);
  /* Nodes are filled sparsely (slots up, data down): zero the gap so the
   * checksum covers defined bytes. */
  memset(node + NODE_HDR + 4 * nslots, 0, data_start - NODE_HDR - 4 * nslots);
  enc32(node, node_crc(node, size));
  if (b->seg && b->fill + size > SEG) {
    int rc = write_segment(b);
    if (rc) return rc;
  }
  if (!b->seg) {
    uint32_t s;
    int rc = segalloc_alloc(b->alloc, &s);
    if (rc) return rc;
    rc = seg_list_push(&b->out.segs, s);
    if (rc) {
      segalloc_free(b->alloc, s);
      return rc;
    }
    b->seg = s;
    b->fill = 0;
  }
  uint64_t off = seg_offset(b->seg) + b->fill;
  memcpy(b->seg_buf + b->fill, node, size);
  b->fill += size;
  b->out.bytes += size;
  const uint8_t *k = b->first_key;
  uint16_t kl = b->first_len;
  if (h) {
    uint64_t child;
    node_hdr nh = {.type = NODE_INDEX, .height = (uint16_t)h, .pages = pages, .nslots = nslots,
                   .data_start = data_start};
    int rc = index_entry(node, &nh, 0, &child, &k, &kl);
    if (rc) return rc;
  }
  if (h + 1 >= NODE_MAX_HEIGHT) return par_error(PAR_ELIMIT, "B+-tree too tall");
  if (h + 1 == b->levels) {
    build_level *p = &b->lvl[h + 1];
    p->size = INDEX_SIZE;
    p->buf = malloc(INDEX_SIZE);
    if (!p->buf) return par_error(PAR_ENOMEM, "index node buffer");
    node_reset(p, h + 1);
    b->levels++;
  }
  /* k points into node or first_key, which only level h resets. */
  return add_index(b, h + 1, k, kl, off);
}

/* Appends a pivot to the open index node of level h, emitting it first when full. */
static int add_index(tree_builder *b, int h, const void *key, uint16_t key_len, uint64_t child) {
  build_level *l = &b->lvl[h];
  size_t need = index_entry_size(key_len);
  if (NODE_HDR + 4ull * l->nslots + (l->size - l->data_start) + need > l->size) {
    int rc = emit(b, h, l->buf, l->size, l->nslots, l->data_start);
    if (rc) return rc;
    node_reset(l, h);
  }
  l->data_start -= (uint32_t)need - 4;
  uint8_t *e = l->buf + l->data_start;
  enc64(e, child);
  enc16(e + 8, key_len);
  memcpy(e + INDEX_ENTRY_HDR, key, key_len);
  enc32(l->buf + NODE_HDR + 4 * l->nslots, l->data_start);
  l->nslots++;
  return PAR_OK;
}

/* Appends an entry to the open leaf, emitting it first when full. The
 * first entry of a leaf has its whole key read: it becomes the pivot. */
static int add_leaf(tree_builder *b, tree_entry *x) {
  build_level *l = &b->lvl[0];
  uint16_t key_len = entry_key_len(x), stored = entry_stored_len(x->cat, key_len);
  size_t need = leaf_entry_size(stored, key_len, x->value_len);
  if (l->nslots && NODE_HDR + 4ull * l->nslots + (l->size - l->data_start) + need > l->size) {
    int rc = emit(b, 0, l->buf, l->size, l->nslots, l->data_start);
    if (rc) return rc;
    node_reset(l, 0);
  }
  if (!l->nslots) {
    int rc = entry_resolve_key(x);
    if (rc) return rc;
    memcpy(b->first_key, x->key, x->key_len);
    b->first_len = x->key_len;
  }
  if (x->cat == CAT_MEDIUM && x->value_len == VPTR_SIZE) b->out.medium_bytes += vptr_decode(x->value).size;
  b->out.entries++;
  uint32_t slot_cat = (uint32_t)x->cat << 29;
  if (NODE_HDR + need > l->size) { /* one pair larger than a leaf: a leaf of its own */
    uint32_t size = (uint32_t)ALIGN_UP(NODE_HDR + need, PAR_BLOCK);
    free(b->jumbo);
    b->jumbo = malloc(size);
    if (!b->jumbo) return par_error(PAR_ENOMEM, "leaf of %u bytes", size);
    memset(b->jumbo, 0, NODE_HDR);
    enc16(b->jumbo + 4, NODE_LEAF);
    uint32_t off = size - (uint32_t)(need - 4);
    enc32(b->jumbo + NODE_HDR, slot_cat | off);
    leaf_entry_encode(b->jumbo + off, x->key, stored, key_len, x->value, x->value_len);
    return emit(b, 0, b->jumbo, size, 1, off);
  }
  l->data_start -= (uint32_t)need - 4;
  leaf_entry_encode(l->buf + l->data_start, x->key, stored, key_len, x->value, x->value_len);
  enc32(l->buf + NODE_HDR + 4 * l->nslots, slot_cat | l->data_start);
  l->nslots++;
  return PAR_OK;
}

int builder_add(tree_builder *b, int cat, const void *key, uint16_t key_len, const void *value,
                uint32_t value_len) {
  tree_entry e = {.cat = cat, .key = key, .key_len = key_len, .value = value, .value_len = value_len};
  return add_leaf(b, &e);
}

int builder_add_entry(tree_builder *b, tree_entry *e) { return add_leaf(b, e); }

static int write_medium_segment(tree_builder *b) {
  memset(b->mbuf + b->mfill, 0, SEG - b->mfill);
  int rc = file_write(b->file, b->mbuf, SEG, seg_offset(b->mseg));
  b->mseg = 0;
  b->mfill = 0;
  return rc;
}

int builder_add_medium(tree_builder *b, uint32_t region_id, const void *key, uint16_t key_len,
                       const void *value, uint32_t value_len) {
  size_t size = vlog_record_size(key_len, value_len);
  if (size > SEG) return par_error(PAR_ETOOBIG, "medium record of %zu bytes", size);
  if (!b->mbuf) {
    b->mbuf = file_buf_alloc(SEG);
    if (!b->mbuf) return par_error(PAR_ENOMEM, "medium-log buffer");
    b->mseed = vlog_seed(region_id, MEDIUM_INC);
  }
  if (b->mseg && b->mfill + size > SEG) {
    int rc = write_medium_segment(b);
    if (rc) return rc;
  }
  if (!b->mseg) {
    uint32_t s;
    int rc = segalloc_alloc(b->alloc, &s);
    if (rc) return rc;
    rc = seg_list_push(&b->out.msegs, s);
    if (rc) {
      segalloc_free(b->alloc, s);
      return rc;
    }
    b->mseg = s;
  }
  vptr p = {b->mseg, b->mfill, MEDIUM_INC, (uint32_t)size};
  vlog_encode(b->mbuf + b->mfill, b->mseed, 0, key, key_len, value, value_len);
  b->mfill += (uint32_t)size;
  uint8_t enc[VPTR_SIZE];
  vptr_encode(enc, p);
  return builder_add(b, CAT_MEDIUM, key, key_len, enc, VPTR_SIZE);
}

int builder_finish(tree_builder *b, tree_desc *out) {
  int rc = PAR_OK;
  uint64_t root = 0;
  uint32_t height = 0;
  /* Close the open nodes bottom-up; each emit adds a pivot one level up,
   * until the top level holds a single pivot: its child is the root. */
  for (int h = 0; h < b->levels && !rc; h++) {
    build_level *l = &b->lvl[h];
    if (!l->nslots) continue;
    if (h > 0 && h + 1 == b->levels && l->nslots == 1) {
      const uint8_t *k;
      uint16_t kl;
      node_hdr nh = {.type = NODE_INDEX, .height = (uint16_t)h, .pages = l->size / PAR_BLOCK,
                     .nslots = 1, .data_start = l->data_start};
      rc = index_entry(l->buf, &nh, 0, &root, &k, &kl);
      height = (uint32_t)h;
      break;
    }
    rc = emit(b, h, l->buf, l->size, l->nslots, l->data_start);
    if (!rc) node_reset(l, h);
  }
  if (!rc && b->seg) rc = write_segment(b);
  if (!rc && b->mseg) rc = write_medium_segment(b);
  if (!rc && (b->out.segs.n || b->out.msegs.n)) rc = file_sync(b->file);
  if (rc) {
    builder_abort(b);
    return rc;
  }
  b->out.root = root;
  b->out.height = height;
  *out = b->out;
  memset(&b->out, 0, sizeof b->out);
  free_buffers(b);
  memset(b, 0, sizeof *b);
  return PAR_OK;
}
