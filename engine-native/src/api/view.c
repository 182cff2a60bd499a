/* Views: creation, reference counting, and the registry of live views that
 * tells the large log's garbage collector when no reader can still follow
 * a pointer into a segment it emptied. */
#include <stdlib.h>
#include <string.h>

#include "api/internal.h"

static void link_live(par_region *r, view *w) {
  pthread_mutex_lock(&r->live_mu);
  w->seq = ++r->view_seq;
  w->prev = r->live_tail;
  w->next = NULL;
  if (r->live_tail) r->live_tail->next = w;
  else r->live_head = w;
  r->live_tail = w;
  pthread_mutex_unlock(&r->live_mu);
}

view *view_create(par_region *r) {
  view *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  atomic_init(&w->refs, 1);
  w->owner = r;
  link_live(r, w);
  return w;
}

view *view_clone(const view *src) {
  view *w = calloc(1, sizeof *w);
  if (!w) return NULL;
  /* Field by field: src->refs changes under other threads (a plain struct
   * copy would read it non-atomically). */
  atomic_init(&w->refs, 1);
  w->owner = src->owner;
  w->active = src->active;
  w->frozen = src->frozen;
  memcpy(w->tree, src->tree, sizeof w->tree);
  memtable_ref(w->active);
  if (w->frozen) memtable_ref(w->frozen);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++)
      if (w->tree[i][j]) dtree_ref(w->tree[i][j]);
  link_live(src->owner, w);
  return w;
}

void view_unref(view *w) {
  if (!w || atomic_fetch_sub(&w->refs, 1) != 1) return;
  par_region *r = w->owner;
  pthread_mutex_lock(&r->live_mu);
  if (w->prev) w->prev->next = w->next;
  else r->live_head = w->next;
  if (w->next) w->next->prev = w->prev;
  else r->live_tail = w->prev;
  pthread_mutex_unlock(&r->live_mu);
  memtable_unref(w->active);
  memtable_unref(w->frozen);
  for (int i = 1; i <= PAR_MAX_LEVELS; i++)
    for (int j = 0; j < LEVEL_TREES; j++) dtree_unref(w->tree[i][j]);
  free(w);
}

uint64_t view_oldest_seq(par_region *r) {
  pthread_mutex_lock(&r->live_mu);
  uint64_t s = r->live_head ? r->live_head->seq : r->view_seq + 1;
  pthread_mutex_unlock(&r->live_mu);
  return s;
}
