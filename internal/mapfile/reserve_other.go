//go:build !linux

package mapfile

import "os"

// Reserve does nothing here: preallocation is a Linux call.
func Reserve(*os.File, int64) error { return nil }

// RenameNoReplace renames oldpath to newpath unless newpath exists, by a
// hard link, which refuses an existing name.
func RenameNoReplace(oldpath, newpath string) error { return linkNoReplace(oldpath, newpath) }
