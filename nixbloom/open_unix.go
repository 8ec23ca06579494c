//go:build unix

package nixbloom

import "syscall"

// openNonBlock makes open(2) return at once on a FIFO or device.
const openNonBlock = syscall.O_NONBLOCK
