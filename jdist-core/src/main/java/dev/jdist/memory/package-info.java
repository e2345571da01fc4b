/**
 * The native memory behind {@code dev.jdist.Array}: {@link dev.jdist.memory.ArrayMemory}, small arrays in automatic
 * arenas and large ones in reused blocks of size classes, with a bounded cache ({@code JDIST_ARRAY_CACHE_BYTES}) and
 * a GC nudge. Knows nothing of groups; a bad {@code JDIST_ARRAY_CACHE_BYTES} is a {@code ConfigException}.
 *
 * <p>May import (docs/architecture.md, "Allowed imports"): dev.jdist.
 */
package dev.jdist.memory;
