/* Reads through a volume's memory map that survive a fault.
 *
 * A read of a mapped page the kernel cannot supply — the file was
 * truncated under the map by another process, or the device failed to
 * read the page — raises SIGBUS in the reading thread, which by default
 * kills the process (a JVM included). The engine's mapped reads run inside
 * mapguard_run: a SIGBUS handler, installed when the first map is
 * registered, sees that the faulting address lies in a registered map and
 * that the thread is inside a guard, and jumps back to the guard, which
 * returns PAR_EIO. Any other SIGBUS goes to the handler that was installed
 * before (a JVM's, which handles faults of its own mapped buffers, or the
 * default action), with the same siginfo and context, as the JVM's own
 * signal chaining (libjsig) would pass it.
 *
 * The rule for the function a guard runs: a fault abandons it at the
 * faulting read, so at every read of the map it must hold no lock it took
 * itself (locks its caller holds stay held: control returns to the
 * caller), and any memory or state it owns must be reachable by its caller
 * through arg (stored there before the read), which cleans up after
 * PAR_EIO. Pointers into the map that the engine hands to its caller (zero-copy
 * views, scanner entries) are read by the caller, outside any guard. */
#ifndef PAR_IO_MAPGUARD_H
#define PAR_IO_MAPGUARD_H

#include <stddef.h>

/* Registers [base, base + len) as a map whose faults guards catch, and
 * installs the handler on first use. PAR_OK, or PAR_ENOMEM when the
 * registry is full (every slot holds a live map). */
int mapguard_register(const void *base, size_t len);
void mapguard_unregister(const void *base);

typedef int (*mapguard_fn)(void *arg);
/* fn(arg)'s status, or PAR_EIO (with a message naming the address) when
 * a read of a registered map faulted inside it. Guards nest. */
int mapguard_run(mapguard_fn fn, void *arg);

/* memmove whose source may be a registered map: PAR_OK or PAR_EIO. */
int mapguard_copy(void *dst, const void *src, size_t len);

#endif
