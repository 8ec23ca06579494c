//go:build !unix

package pkbf

import "os"

const openFlags = 0

// mapFile reads the file: this platform has no mmap or flock here.
func mapFile(file *os.File, path string, writable bool) (*mapping, error) {
	h, size, err := checkFile(file, path)
	if err != nil {
		return nil, err
	}
	m := &mapping{file: file, path: path, opened: h, size: size}
	m.b, err = readFile(file, size)
	return m, err
}

func munmap([]byte) error { return nil }

func lockFile(*os.File, bool) error { return nil }

func unlockFile(*os.File) {}
