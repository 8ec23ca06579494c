//go:build !unix

package pkbf

import "os"

// mapFile reads the first size bytes of file: this platform has no mmap here.
func mapFile(file *os.File, size int) ([]byte, func() error, error) {
	return readFile(file, size)
}
