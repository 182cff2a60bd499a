#include "io/fault.h"

#include <pthread.h>
#include <stdatomic.h>

#include "io/file.h"

typedef struct slot {
  fault_rule r;
  uint64_t seen, fired;
  int used;
} slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static slot slots[FAULT_MAX_RULES];
static atomic_int armed; /* rules and observers in use: the fast path reads only this */
static void (*sync_observer)(void *);
static void *sync_observer_arg;
static void (*read_observer)(void *);
static void *read_observer_arg;
static void (*prefetch_observer)(void *, uint64_t, uint64_t);
static void *prefetch_observer_arg;

int fault_arm(const fault_rule *r) {
  pthread_mutex_lock(&mu);
  int id = -1;
  for (int i = 0; i < FAULT_MAX_RULES && id < 0; i++)
    if (!slots[i].used) {
      slots[i] = (slot){*r, 0, 0, 1};
      id = i;
      atomic_fetch_add(&armed, 1);
    }
  pthread_mutex_unlock(&mu);
  return id;
}

uint64_t fault_fired(int id) {
  pthread_mutex_lock(&mu);
  uint64_t n = id >= 0 && id < FAULT_MAX_RULES ? slots[id].fired : 0;
  pthread_mutex_unlock(&mu);
  return n;
}

void fault_reset(void) {
  pthread_mutex_lock(&mu);
  for (int i = 0; i < FAULT_MAX_RULES; i++) slots[i] = (slot){0};
  sync_observer = NULL;
  read_observer = NULL;
  prefetch_observer = NULL;
  atomic_store(&armed, 0);
  pthread_mutex_unlock(&mu);
}

static void observe(void (**observer)(void *), void **observer_arg, void (*fn)(void *), void *arg) {
  pthread_mutex_lock(&mu);
  if (!*observer != !fn) atomic_fetch_add(&armed, fn ? 1 : -1);
  *observer = fn;
  *observer_arg = arg;
  pthread_mutex_unlock(&mu);
}

void fault_observe_syncs(void (*fn)(void *), void *arg) { observe(&sync_observer, &sync_observer_arg, fn, arg); }
void fault_observe_reads(void (*fn)(void *), void *arg) { observe(&read_observer, &read_observer_arg, fn, arg); }

void fault_observe_prefetches(void (*fn)(void *, uint64_t, uint64_t), void *arg) {
  pthread_mutex_lock(&mu);
  if (!prefetch_observer != !fn) atomic_fetch_add(&armed, fn ? 1 : -1);
  prefetch_observer = fn;
  prefetch_observer_arg = arg;
  pthread_mutex_unlock(&mu);
}

void fault_prefetch_seen(uint64_t off, uint64_t len) {
  if (!atomic_load_explicit(&armed, memory_order_relaxed)) return;
  pthread_mutex_lock(&mu);
  void (*observer)(void *, uint64_t, uint64_t) = prefetch_observer;
  void *arg = prefetch_observer_arg;
  pthread_mutex_unlock(&mu);
  if (observer) observer(arg, off, len);
}

static int matches(const fault_rule *r, fault_op op, uint64_t off, size_t len) {
  if (r->op != op) return 0;
  if ((op == FAULT_PWRITE || op == FAULT_PREAD) && len < r->min_len) return 0;
  if (!r->hi || op == FAULT_FSYNC || op == FAULT_L0_ENTRY || op == FAULT_L0_NODE) return 1;
  return off < r->hi && off + len > r->lo;
}

int fault_check(fault_op op, uint64_t off, size_t *len) {
  if (!atomic_load_explicit(&armed, memory_order_relaxed)) return 0;
  int err = 0;
  pthread_mutex_lock(&mu);
  void (*observer)(void *) = op == FAULT_FSYNC ? sync_observer : op == FAULT_PREAD ? read_observer : NULL;
  void *observer_arg = op == FAULT_FSYNC ? sync_observer_arg : read_observer_arg;
  for (int i = 0; i < FAULT_MAX_RULES; i++) {
    slot *s = &slots[i];
    if (!s->used || !matches(&s->r, op, off, *len)) continue;
    if (s->seen++ < s->r.skip) continue;
    if (s->r.times && s->fired >= s->r.times) continue;
    s->fired++;
    if (s->r.err) {
      err = s->r.err;
    } else {
      size_t half = *len / 2;
      *len = half >= PAR_BLOCK ? half / PAR_BLOCK * PAR_BLOCK : half;
    }
    break;
  }
  pthread_mutex_unlock(&mu);
  if (observer) observer(observer_arg);
  return err;
}
