//go:build !unix

package update

import "io/fs"

// oNoFollow is 0 where the system has no O_NOFOLLOW.
const oNoFollow = 0

// oNonBlock is 0 where the system has no O_NONBLOCK.
const oNonBlock = 0

// hardLinks is 1 where the system does not say.
func hardLinks(fs.FileInfo) uint64 { return 1 }

// checkDir checks nothing where there are no Unix permissions to read.
func checkDir(string) error { return nil }
