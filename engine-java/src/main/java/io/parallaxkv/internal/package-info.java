/**
 * Internals of the Parallax Java API: the two native backends (JNI and FFM), the native
 * library loader, handle lifecycle tracking and per-thread scratch memory.
 *
 * <p>Nothing in this package is API: it may change in any release. Use {@link io.parallaxkv}.
 */
package io.parallaxkv.internal;
