/* L0: an in-memory B+-tree of versioned entries.
 *
 * Entries are ordered by (key ascending, LSN descending) and never change
 * once inserted: an overwrite or delete inserts a newer version. That makes
 * reads at a snapshot LSN trivial and lets iterators keep pointers to
 * entries after they drop the lock — entries live in an arena that is freed
 * only with the whole memtable (reference counted).
 *
 * Locking: a rwlock guards the tree shape; inserts take it exclusively,
 * lookups and iterator refills share it. */
#ifndef PAR_INDEX_MEMTABLE_H
#define PAR_INDEX_MEMTABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "util/range_set.h"
#include "alloc/membudget.h"

typedef struct mt_entry {
  uint64_t lsn;
  uint32_t value_len;
  uint16_t key_len;
  uint8_t type; /* WAL_PUT, WAL_DELETE, WAL_PUT_LARGE or WAL_DELETE_RANGE
                   (key: the range's begin, value: its end) */
  uint8_t reserved;
  uint8_t data[]; /* key, then value */
} mt_entry;

static inline const uint8_t *mt_key(const mt_entry *e) { return e->data; }
static inline const uint8_t *mt_value(const mt_entry *e) { return e->data + e->key_len; }
/* Whether the range tombstone t (WAL_DELETE_RANGE) holds key. */
int mt_range_holds(const mt_entry *t, const void *key, size_t key_len);
/* The leaf category an entry becomes (CAT_* of index/node.h). */
int mt_category(const mt_entry *e);

typedef struct mt_node mt_node;
typedef struct mt_arena_chunk mt_arena_chunk;

typedef struct memtable {
  atomic_int refs;
  pthread_rwlock_t lock;
  mt_node *root;
  mt_arena_chunk *chunks;
  atomic_uint_fast64_t bytes; /* entries and nodes (chunk slack not counted) */
  /* Bytes of the large-log records its entries point at (the writer adds
   * them): space whose garbage only the merge of this L0 can find. */
  atomic_uint_fast64_t large_bytes;
  uint64_t entries;        /* versions, range tombstones included */
  uint64_t max_lsn;
  /* Range tombstones, kept beside the tree (they have no single key), in
   * LSN order; few by design: each costs a check on every read of L0. */
  const mt_entry **rtombs;
  uint32_t nrtombs, rtombs_cap; /* nrtombs: also read atomically, without the lock */
  range_set rcover;             /* the union of their ranges: one binary search for
                                   a read that sees them all */
  size_t chunk_next;  /* capacity of the next arena chunk (0: the first) */
  /* The volume's memory budget this L0 charges the memory it allocates to
   * (NULL: none), what it charged (under the inserts' lock), and whether it
   * was discharged (memtable_discharge). */
  mem_budget *budget;
  uint64_t charged;
  atomic_int discharged;
} memtable;

memtable *memtable_create(void);
/* Charges the memory m allocates, now and as it grows, to b (once, before
 * any insert). */
void memtable_set_budget(memtable *m, mem_budget *b);
/* Gives m's bytes back to its budget, once: the L0 was merged (its memory
 * lives on only as long as readers hold it) or is being freed. */
void memtable_discharge(memtable *m);
void memtable_ref(memtable *m);
void memtable_unref(memtable *m);

/* Inserts a version; the caller inserts LSNs in increasing order. */
int memtable_insert(memtable *m, uint64_t lsn, uint8_t type, const void *key, uint16_t key_len,
                    const void *value, uint32_t value_len);
/* memtable_insert in two steps, for a writer that must not fail after its
 * WAL record is written: memtable_entry copies the version into the arena
 * (NULL with PAR_ENOMEM; the bytes are then simply unused), memtable_link
 * links it into the tree; it allocates only tree nodes (under 1 KiB each),
 * so it fails only when the process is out of memory. An entry that is
 * never linked is invisible. */
mt_entry *memtable_entry(memtable *m, uint64_t lsn, uint8_t type, const void *key, uint16_t key_len,
                         const void *value, uint32_t value_len);
int memtable_link(memtable *m, const mt_entry *e);
/* Whether a range tombstone of m with newer_than < LSN <= snap holds key;
 * newer_than is the LSN of the version of key a read found in m (0: none,
 * then the tombstone also hides the older sources). */
int memtable_range_hides(memtable *m, const void *key, size_t key_len, uint64_t snap, uint64_t newer_than);
/* m's range tombstones with LSN <= snap: copied into a malloc'd array
 * (*out, *n; NULL and 0 when there is none), and the union of their ranges
 * into *cover. */
int memtable_range_tombs(memtable *m, uint64_t snap, const mt_entry ***out, uint32_t *n, range_set *cover);

/* The newest version of key with LSN <= snap, or NULL. */
const mt_entry *memtable_get(memtable *m, const void *key, size_t key_len, uint64_t snap);

/* memtable_get of n keys under one hold of the read lock. */
void memtable_get_many(memtable *m, size_t n, const void *const *keys, const size_t *lens, uint64_t snap,
                       const mt_entry **out);

/* Copies into out[] (at most max) the newest version <= snap of each key at
 * or after (key, key_len) — strictly after when exclusive — in key order.
 * key == NULL starts at the first key. Older versions (<= snap) of the keys
 * copied are passed to shadowed when it is not NULL. Returns the number
 * copied. */
typedef void (*mt_shadowed_fn)(void *arg, const mt_entry *e);
uint32_t memtable_collect(memtable *m, const void *key, size_t key_len, int exclusive, uint64_t snap,
                          const mt_entry **out, uint32_t max, mt_shadowed_fn shadowed, void *arg);
/* The same in reverse: the newest version <= snap of each key at or before
 * key (strictly before when exclusive; key == NULL starts at the last key),
 * in descending key order. Returns the number copied. */
uint32_t memtable_collect_rev(memtable *m, const void *key, size_t key_len, int exclusive,
                              uint64_t snap, const mt_entry **out, uint32_t max);

/* The share of m's entries (versions) with a key in [begin, end) (NULL:
 * the first key / past the last), estimated in O(height) from the child
 * or slot each bound's descent takes, as if the nodes (all split at the
 * same fan-out) were equally full; *entries is m's entry count at that
 * moment. */
double memtable_range_share(memtable *m, const void *begin, size_t begin_len, const void *end,
                            size_t end_len, uint64_t *entries);

#endif
