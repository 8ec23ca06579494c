//go:build unix

package nixbloom

import "syscall"

func init() {
	mkfifo = func(path string) error { return syscall.Mkfifo(path, 0o644) }
}
