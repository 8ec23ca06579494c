//go:build !unix

package nixbloom

// openNonBlock is 0 where the system has no FIFOs to wait on.
const openNonBlock = 0
