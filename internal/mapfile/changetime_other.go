//go:build !(linux || darwin || freebsd || netbsd)

package mapfile

import "io/fs"

// ChangeTime returns 0: this platform's file information has no change
// time here.
func ChangeTime(fs.FileInfo) int64 { return 0 }
