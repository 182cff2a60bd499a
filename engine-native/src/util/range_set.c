#include "util/range_set.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "parallax/parallax.h"
#include "util/coding.h"
#include "util/status.h"

static uint8_t *dup_key(const void *k, size_t len) {
  uint8_t *p = malloc(len ? len : 1);
  if (p && len) memcpy(p, k, len);
  return p;
}

/* The first range whose end is >= key: the only one that can hold key or
 * touch a range starting at key. */
static uint32_t first_ending_at_or_after(const range_set *s, const void *key, size_t key_len) {
  uint32_t lo = 0, hi = s->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (key_cmp(s->v[mid].end, s->v[mid].end_len, key, key_len) < 0) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int range_set_add(range_set *s, const void *begin, size_t begin_len, const void *end, size_t end_len) {
  if (key_cmp(begin, begin_len, end, end_len) >= 0) return PAR_OK;
  /* Ranges [i, j) overlap or touch [begin, end): they become one. */
  uint32_t i = first_ending_at_or_after(s, begin, begin_len), j = i;
  while (j < s->n && key_cmp(s->v[j].begin, s->v[j].begin_len, end, end_len) <= 0) j++;
  const uint8_t *b = begin, *e = end;
  size_t bl = begin_len, el = end_len;
  if (j > i && key_cmp(s->v[i].begin, s->v[i].begin_len, b, bl) < 0) b = s->v[i].begin, bl = s->v[i].begin_len;
  if (j > i && key_cmp(s->v[j - 1].end, s->v[j - 1].end_len, e, el) > 0) e = s->v[j - 1].end, el = s->v[j - 1].end_len;
  key_range r = {dup_key(b, bl), dup_key(e, el), (uint16_t)bl, (uint16_t)el};
  if (!r.begin || !r.end) goto oom;
  if (j == i && s->n == s->cap) {
    uint32_t cap = s->cap ? s->cap * 2 : 4;
    key_range *v = realloc(s->v, cap * sizeof *v);
    if (!v) goto oom;
    s->v = v;
    s->cap = cap;
  }
  for (uint32_t k = i; k < j; k++) {
    free(s->v[k].begin);
    free(s->v[k].end);
  }
  if (j == i) memmove(s->v + i + 1, s->v + i, (s->n - i) * sizeof *s->v), s->n++;
  else memmove(s->v + i + 1, s->v + j, (s->n - j) * sizeof *s->v), s->n -= j - i - 1;
  s->v[i] = r;
  return PAR_OK;
oom:
  free(r.begin);
  free(r.end);
  return par_error(PAR_ENOMEM, "range tombstone set");
}

int range_set_union(range_set *dst, const range_set *src) {
  for (uint32_t i = 0; i < src->n; i++) {
    const key_range *r = &src->v[i];
    int rc = range_set_add(dst, r->begin, r->begin_len, r->end, r->end_len);
    if (rc) return rc;
  }
  return PAR_OK;
}

int range_set_covers(const range_set *s, const void *key, size_t key_len) {
  if (!s->n) return 0;
  /* A range holds key iff it is the first to end after key and begins at
   * or before it (ends are exclusive). */
  uint32_t lo = 0, hi = s->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (key_cmp(s->v[mid].end, s->v[mid].end_len, key, key_len) <= 0) lo = mid + 1;
    else hi = mid;
  }
  return lo < s->n && key_cmp(s->v[lo].begin, s->v[lo].begin_len, key, key_len) <= 0;
}

int range_set_copy(range_set *dst, const range_set *src) {
  memset(dst, 0, sizeof *dst);
  if (!src->n) return PAR_OK;
  dst->v = calloc(src->n, sizeof *dst->v);
  if (!dst->v) return par_error(PAR_ENOMEM, "range tombstone set");
  dst->cap = src->n;
  for (uint32_t i = 0; i < src->n; i++) {
    const key_range *r = &src->v[i];
    dst->v[i] = (key_range){dup_key(r->begin, r->begin_len), dup_key(r->end, r->end_len), r->begin_len, r->end_len};
    dst->n++;
    if (!dst->v[i].begin || !dst->v[i].end) {
      range_set_free(dst);
      return par_error(PAR_ENOMEM, "range tombstone set");
    }
  }
  return PAR_OK;
}

void range_set_free(range_set *s) {
  for (uint32_t i = 0; i < s->n; i++) {
    free(s->v[i].begin);
    free(s->v[i].end);
  }
  free(s->v);
  memset(s, 0, sizeof *s);
}

size_t range_set_encoded_size(const range_set *s) {
  size_t n = 4;
  for (uint32_t i = 0; i < s->n; i++) n += 4u + s->v[i].begin_len + s->v[i].end_len;
  return n;
}

uint8_t *range_set_encode(const range_set *s, uint8_t *out) {
  enc32(out, s->n);
  out += 4;
  for (uint32_t i = 0; i < s->n; i++) {
    const key_range *r = &s->v[i];
    enc16(out, r->begin_len);
    memcpy(out + 2, r->begin, r->begin_len);
    out += 2u + r->begin_len;
    enc16(out, r->end_len);
    memcpy(out + 2, r->end, r->end_len);
    out += 2u + r->end_len;
  }
  return out;
}

/* The key at *p (u16 length, bytes) if whole and 1 .. PAR_MAX_KEY_SIZE long. */
static const uint8_t *decode_key(const uint8_t **p, const uint8_t *end, uint16_t *len) {
  if (end - *p < 2) return NULL;
  *len = dec16(*p);
  const uint8_t *k = *p + 2;
  if (*len < 1 || *len > PAR_MAX_KEY_SIZE || end - k < *len) return NULL;
  *p = k + *len;
  return k;
}

int range_set_decode(range_set *s, const uint8_t *in, size_t len) {
  assert(!s->n);
  const uint8_t *p = in + 4, *end = in + len;
  uint32_t count = len >= 4 ? dec32(in) : 0;
  int rc = len >= 4 && count <= len / 6 ? PAR_OK : PAR_ECORRUPT;
  for (uint32_t i = 0; !rc && i < count; i++) {
    uint16_t bl, el;
    const uint8_t *b = decode_key(&p, end, &bl), *e = b ? decode_key(&p, end, &el) : NULL;
    /* Each range non-empty and after the previous one's end. */
    if (!e || key_cmp(b, bl, e, el) >= 0 || (s->n && key_cmp(s->v[s->n - 1].end, s->v[s->n - 1].end_len, b, bl) >= 0))
      rc = PAR_ECORRUPT;
    else
      rc = range_set_add(s, b, bl, e, el);
  }
  if (!rc && p != end) rc = PAR_ECORRUPT;
  if (rc) range_set_free(s);
  return rc == PAR_ECORRUPT ? par_error(PAR_ECORRUPT, "a malformed range tombstone set") : rc;
}
