package text

import "bytes"

// FilterHint names what the start of a file, b, that is not a pkbfv1
// filter looks like, for the common mistakes: a key or certificate given
// where the filter goes, a compressed download. It returns "" or a clause
// to append to the error, starting ": ".
func FilterHint(b []byte) string {
	switch {
	case bytes.HasPrefix(b, []byte("-----BEGIN")), bytes.HasPrefix(b, []byte("ssh-")), bytes.HasPrefix(b, []byte("ecdsa-")):
		return ": this looks like a key or certificate, not a filter"
	case len(b) > 1 && b[0] == 0x30 && b[1] >= 0x80:
		return ": this looks like a DER key or certificate, not a filter"
	case bytes.HasPrefix(b, []byte{0x1f, 0x8b}):
		return ": this is gzip-compressed: decompress it first (gunzip)"
	case bytes.HasPrefix(b, []byte("BZh")):
		return ": this is bzip2-compressed: decompress it first (bunzip2)"
	case bytes.HasPrefix(b, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		return ": this is xz-compressed: decompress it first (unxz)"
	case bytes.HasPrefix(b, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		return ": this is zstd-compressed: decompress it first (unzstd)"
	case bytes.HasPrefix(b, []byte("PK\x03\x04")):
		return ": this is a zip archive: extract the filter first"
	case bytes.HasPrefix(b, []byte("pkbfv")):
		return ": a pkbf format version this package does not read"
	case bytes.HasPrefix(b, []byte("<")):
		return ": this looks like an HTML or XML page (a failed download?)"
	}
	return ""
}
