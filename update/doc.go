// Package update keeps a pkbfv1 filter file current from a publisher's
// URL, as geoipupdate keeps GeoIP databases: the server's header first
// (no transfer when nothing changed), a download resumed where an
// earlier one stopped, judged by the rule below before anything is
// replaced, and installed by a rename, so that programs reading the
// filter ([pkbf.Open], [pkbf.OpenLive], pkbf serve) only ever see the
// complete old file or the complete new one. Call [Update].
//
// # What Update trusts
//
// Order. Filters are ordered by their header's update time, then by their
// revision. The reference implementation sets the time to now at every
// add and raises the revision once an editing session, and a publisher
// that re-creates its filter (to grow it, or to drop keys) starts again
// at revision 1, at a later time: a later time is a newer filter, whatever
// its revision, and a replay of an older filter, signed or not, has an
// earlier time and is refused ([ErrOlder]). A header time more than
// [MaxClockSkew] past this machine's clock is refused ([ErrLockIn]), so
// no filter orders itself ahead of the publisher's next one for longer
// than that; a revision, however high, orders nothing past a later time.
// An installed filter whose time is past the skew (one installed with
// [Options.Force]) orders nothing.
//
// Pins. A signature by a key given ([Options.SignatureURL]), a digest
// given ([Options.SHA256]), or a digest file from another source than the
// filter ([Options.SHA256URL]) vouches for the exact bytes installed. The
// digest file and the filter are one source when any hop of one's
// redirect chains (the URL configured is the first) has the origin of a
// hop of the other's (scheme, host and port, a default port written or
// not, a host's case), or when an address resolved or connected to on
// one's way is on the other's (two names of one server, two ports of one
// machine, one proxy), or when the client does not tell the addresses.
// Whoever answers for the filter's host can only add hops and addresses,
// so it can make them one source, never two. From one source, a digest
// file proves only the transfer. A pinned filter installs when it is
// newer, even as a rebuild: other parameters, fewer entries, bits
// removed.
//
// Unpinned. Without a pin, the TLS connection to the configured host is
// all that vouches for the filter, and one interception must do no
// lasting harm. An unpinned filter must be newer, have as many hashes and
// bits as the installed one ([ErrWeaker]), not more hashes nor a longer
// hash length, whose new probes the installed bits cannot check
// ([ErrUnverifiable]), hold every bit the installed one has set
// ([ErrDropsBits]), and answer "probably" for at most
// max([Options.MaxFPRate], twice the installed filter's rate) of the keys
// it does not hold, its rate estimated from its bits set ([ErrSaturated]).
// Its entry count cannot be verified and is not compared: an
// interception can set it anywhere its own bits' fill check allows,
// which later filters, judged by their bits, do not depend on.
//
// Every filter, pinned or not, is refused when its size is over
// [Options.MaxSize] (before any byte is written), when its entry count
// does not fit its bits set ([ErrImplausibleFill]), when it answers
// "probably" for more than [MaxFalseYes] of the keys it does not hold
// ([ErrSaturated]), when it is older than [Options.MaxAge] ([ErrStale]),
// and when it fails a pin ([ErrNotAuthentic]).
//
// Keys added in place. Update holds the filter's flock(2), LOCK_EX, the
// lock of the reference's protocol that pkbf add and the reference gem
// take for each key, from its last look at the installed filter to the
// rename; it waits for it at most a minute, as anyone who can open the
// filter can hold it. A key added before is in the filter it judges; a
// key added after goes to the old file, and the writer is told that the
// filter was replaced (pkbf add says so and exits 2). When the installed
// filter may have been edited in place since Update installed it (its
// header or file is not the one Update recorded, or Update has no record
// of it: the state file lost, or a filter the operator made), the superset
// rule holds for pinned filters too, compared in place or folded onto the
// installed hash length: a filter without the keys added is refused
// ([ErrDropsBits], [ErrWeaker]), never merged with them (the bytes
// installed are the publisher's, as its pin says).
//
// Recovery. A refusal is an error, never "up to date", and installs
// nothing. [Options.AcceptRebuild] lifts the ordering and superset rules
// for one call ([ErrOlder], [ErrSameHeader], [ErrWeaker],
// [ErrUnverifiable], [ErrDropsBits]), keeping every other check: for an
// unpinned publisher's rebuild, and to leave a filter with bits injected
// (which every later genuine filter lacks). [Options.MaxFPRate] raises the
// false-positive ceiling. [Options.Force] lifts the ordering, superset,
// future-time and false-positive rules, never the size limit, the fill
// check, MaxAge or a pin.
//
// Currency. Nothing a server said before decides that the installed
// filter is current: no ETag or Last-Modified is kept for it, and no
// conditional request is sent. Each call asks for the server's header
// alone (an HTTP Range request for its first 24 bytes), which every add
// changes (the time, the entry count or the revision): the header of the
// filter Update installed (still installed, or with keys added in place
// since) means the installed filter is current, and nothing more is
// fetched; another header is a download of the whole file, judged by the
// rule. A server that ignores the range sends the whole file, read no
// further than its header when it is current. The header alone decides
// only for an installed filter whose bytes are confirmed: a pin vouched
// for them (a signature, a digest given, a digest file from another
// source), or a later call downloaded the server's filter whole under
// the recorded header and found every bit of it set in the installed
// filter (the same bytes, or those with keys added in place since).
// Until then (after each unpinned install, and where Update has no
// record of the installed filter or the pins in force have not verified
// it) each call downloads the whole file and compares it: other bits
// under the recorded header are refused ([ErrSameHeader]). That is one
// more download of the whole file after each unpinned install.
//
// So one interception of an unpinned update (every answer of one call
// from someone other than the publisher) can have that call say "up to
// date", or install what the rule admits: the publisher's next header,
// which anyone can read, over the installed bits, say. It cannot make a
// later call say "up to date": the next call that reaches the publisher
// installs the publisher's filter, or refuses it, as every call after
// does, until the publisher's first filter dated after the intercepted
// one (which may be dated up to [MaxClockSkew] ahead) or
// [Options.AcceptRebuild]. Interceptions of two calls in a row, the
// install and the next, can keep a filter's keys out under "up to date"
// until that filter.
//
// Validators. The ETag and Last-Modified of a download's response are
// kept only to resume it (If-Range binds its parts to one file), and only
// when well-formed (an ETag of at most 256 bytes in quoted-string syntax;
// a Last-Modified that parses and is not after now), never as the
// filter's time. A request with them that the server refuses as too
// large or malformed (431, 400, 414) is sent once more without them, the
// download started again.
//
// # Files beside the filter
//
// Update keeps three files beside the filter FILTER, in the same directory:
// regular files, mode 0600, opened without waiting (a FIFO there is not
// waited on: as the state it is ignored, with a warning; as the download,
// removed; as the lock, refused) and never through a symbolic link. It
// refuses a directory that a user other than root and its own can write,
// or that such a user owns: checked for FILTER's directory and, if FILTER
// is a link, for the directory of the file it leads to. The files:
//   - .FILTER.download: the download in progress. An update stopped by a
//     signal, a crash or a broken connection leaves it, and the next update
//     resumes it (with an HTTP Range request, if the server's file is still
//     the same and within Options.MaxSize) or starts again. The server's
//     file is the same when its validators (If-Range) are, and its header,
//     asked for before the rest and again after it, is the download's. It is renamed
//     to FILTER when complete and accepted, and removed when refused.
//   - .FILTER.update.json: the header and file (size and modification
//     time) Update installed, whether its bytes are confirmed, and the
//     pins that verified it, and the URL
//     and validators of the download in progress. Losing it costs one
//     full download, and the next pinned filter must hold every bit of
//     the installed one (keys may have been added in place). One that
//     cannot be saved (a full file system) is removed, with a warning,
//     rather than left to describe another filter. A URL with a user or
//     a query is kept without them, by its SHA-256.
//   - .FILTER.update.lock: the lock that keeps two updates of FILTER from
//     running at once (flock(2); the second waits for the first).
//
// Update never replaces what it did not make: a file at FILTER that is not
// a readable pkbfv1 filter is refused before any request (unless
// [Options.ReplaceInvalid]), and a directory, FIFO, socket or device is
// refused always. A symbolic link at FILTER is followed: the file it leads
// to is replaced, in its own directory, and the three files above sit
// beside that file. Of a file with several hard links only the name path
// is replaced (the others keep the old filter), and Logf says so. A new filter is installed with mode 0644, a
// replacement with the mode of the file it replaced.
package update
