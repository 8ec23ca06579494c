//go:build !linux

package pkbf

import "os"

// reserve does nothing here: preallocation is a Linux call.
func reserve(*os.File, int64) error { return nil }

// renameNoReplace renames oldpath to newpath unless newpath exists, by a
// hard link, which refuses an existing name.
func renameNoReplace(oldpath, newpath string) error { return linkNoReplace(oldpath, newpath) }
