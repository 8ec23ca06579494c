//go:build (amd64 || arm64) && !purego

package probe

// PrefetchLines asks the CPU to bring the cache lines at addrs[0:n] into the
// cache, without waiting for them: PREFETCHT0 on amd64, PRFM PLDL1KEEP on
// arm64. A prefetch never faults, whatever the address. Go has no
// intrinsic for it; one call covers all the lines of a key.
//
//go:noescape
func PrefetchLines(addrs *uintptr, n int)

// prefetchKeys asks the CPU for the cache lines of each key's bytes, up
// to 16 lines (1 KiB) a key, without waiting for them; like
// PrefetchLines, it never faults.
//
//go:noescape
func prefetchKeys(keys [][]byte)
