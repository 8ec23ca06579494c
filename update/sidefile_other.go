//go:build !unix

package update

// oNoFollow is 0 where the system has no O_NOFOLLOW.
const oNoFollow = 0

// oNonBlock is 0 where the system has no O_NONBLOCK.
const oNonBlock = 0

// checkDir checks nothing where there are no Unix permissions to read.
func checkDir(string) error { return nil }
