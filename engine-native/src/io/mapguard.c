#include "io/mapguard.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include "util/status.h"

/* Registered maps. A volume holds its current map and the smaller ones it
 * outgrew (io/file.c), about 14 at most. Slots are claimed by CAS on lo;
 * hi is stored after lo and cleared before it, so the handler, which only
 * reads them, never matches a half-made slot. */
#define MAPGUARD_SLOTS 16384
static uintptr_t map_lo[MAPGUARD_SLOTS], map_hi[MAPGUARD_SLOTS]; /* __atomic builtins only */

typedef struct guard {
  sigjmp_buf env;
  struct guard *prev;
  void *volatile addr; /* the faulting address, set by the handler */
} guard;

/* The innermost guard of this thread. Read by the handler only for faults
 * inside a registered map: threads that fault there have run guards, so
 * their TLS block exists and the read allocates nothing. */
static __thread guard *current;

static struct sigaction previous; /* the handler before ours */
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_error;

static int in_registered_map(uintptr_t a) {
  for (size_t i = 0; i < MAPGUARD_SLOTS; i++) {
    uintptr_t lo = __atomic_load_n(&map_lo[i], __ATOMIC_ACQUIRE);
    if (lo && a >= lo && a < __atomic_load_n(&map_hi[i], __ATOMIC_ACQUIRE)) return 1;
  }
  return 0;
}

/* Hands the signal to the handler installed before ours, as the kernel
 * would have. SIG_DFL: restore it and raise again, which terminates (the
 * signal is blocked until this handler returns, so the fault is reported
 * as the SIGBUS it is). SIG_IGN: nothing. */
static void chain(int sig, siginfo_t *si, void *uc) {
  if (previous.sa_flags & SA_SIGINFO) {
    previous.sa_sigaction(sig, si, uc);
  } else if (previous.sa_handler == SIG_DFL) {
    signal(sig, SIG_DFL);
    raise(sig);
  } else if (previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
  }
}

static void on_sigbus(int sig, siginfo_t *si, void *uc) {
  if (si && in_registered_map((uintptr_t)si->si_addr)) {
    guard *g = current;
    if (g) {
      g->addr = si->si_addr;
      /* Leave with the mask the thread had at the fault (the handler's
       * mask, SIGBUS included, would otherwise stay in force, and a later
       * fault with SIGBUS blocked kills the process). */
      pthread_sigmask(SIG_SETMASK, &((ucontext_t *)uc)->uc_sigmask, NULL);
      siglongjmp(g->env, 1);
    }
  }
  chain(sig, si, uc);
}

static void install(void) {
  struct sigaction sa, old;
  if (sigaction(SIGBUS, NULL, &old) != 0) {
    install_error = 1;
    return;
  }
  previous = old;
  memset(&sa, 0, sizeof sa);
  sa.sa_sigaction = on_sigbus;
  sa.sa_mask = old.sa_mask; /* a chained handler runs with the mask it asked for */
  sigaddset(&sa.sa_mask, SIGBUS);
  sa.sa_flags = (old.sa_flags & ~(SA_RESETHAND | SA_NODEFER)) | SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  if (sigaction(SIGBUS, &sa, NULL) != 0) install_error = 1;
}

int mapguard_register(const void *base, size_t len) {
  pthread_once(&install_once, install);
  if (install_error) return par_error(PAR_EIO, "cannot install the SIGBUS handler that guards mapped reads");
  uintptr_t lo = (uintptr_t)base;
  for (size_t i = 0; i < MAPGUARD_SLOTS; i++) {
    uintptr_t expected = 0;
    if (__atomic_compare_exchange_n(&map_lo[i], &expected, lo, 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
      __atomic_store_n(&map_hi[i], lo + len, __ATOMIC_RELEASE);
      return PAR_OK;
    }
  }
  return par_error(PAR_ENOMEM, "more than %d volume maps are open", MAPGUARD_SLOTS);
}

void mapguard_unregister(const void *base) {
  for (size_t i = 0; i < MAPGUARD_SLOTS; i++)
    if (__atomic_load_n(&map_lo[i], __ATOMIC_ACQUIRE) == (uintptr_t)base) {
      __atomic_store_n(&map_hi[i], 0, __ATOMIC_RELEASE);
      __atomic_store_n(&map_lo[i], 0, __ATOMIC_RELEASE);
      return;
    }
}

int mapguard_run(mapguard_fn fn, void *arg) {
  guard g;
  g.prev = current;
  g.addr = NULL;
  /* savemask 0: no system call per guard; the handler restores the mask. */
  if (sigsetjmp(g.env, 0)) {
    current = g.prev;
    return par_error(PAR_EIO, "a read of the volume at address %p failed (SIGBUS: the file was truncated "
                     "under its memory map, or the device could not read the page)", g.addr);
  }
  current = &g;
  int rc = fn(arg);
  current = g.prev;
  return rc;
}

typedef struct copy_args {
  void *dst;
  const void *src;
  size_t len;
} copy_args;

static int copy_fn(void *arg) {
  copy_args *c = arg;
  memmove(c->dst, c->src, c->len);
  return PAR_OK;
}

int mapguard_copy(void *dst, const void *src, size_t len) {
  copy_args c = {dst, src, len};
  return mapguard_run(copy_fn, &c);
}
