package mapfile

import "io"

// firstChunk is the most ReadDeclared allocates before any data has arrived.
const firstChunk = 1 << 20

// ReadDeclared reads exactly size bytes from r, a size that r's own header
// declared and so is not to be trusted. Until a quarter of size has
// arrived it reads into chunks no larger than the data received so far
// (1 MiB at first); then it allocates the whole result once and reads the
// rest straight into it. So a stream that holds what it declares costs at
// most 1.25 times size, with one copy of a quarter of it, and a stream
// that declares more than it holds costs at most about twice what it sent
// until a quarter of its claim, and at most four times after.
//
// The result is allocated by alloc (nil means make), which must return
// size zero bytes. It returns the data and nil; or n, the bytes that
// arrived, and io.ErrUnexpectedEOF (or io.EOF when nothing did) if r ends
// first; or n and r's error.
func ReadDeclared(r io.Reader, size int, alloc func(int) []byte) (data []byte, n int, err error) {
	quarter := size / 4
	var chunks [][]byte
	for n < quarter {
		c := make([]byte, min(max(firstChunk, n), quarter-n))
		m, err := io.ReadFull(r, c)
		n += m
		if err != nil {
			return nil, n, endErr(err, n)
		}
		chunks = append(chunks, c)
	}
	if alloc == nil {
		data = make([]byte, size)
	} else {
		data = alloc(size)
	}
	at := 0
	for _, c := range chunks {
		at += copy(data[at:], c)
	}
	chunks = nil
	m, err := io.ReadFull(r, data[n:])
	n += m
	if err != nil {
		return nil, n, endErr(err, n)
	}
	return data, n, nil
}

func endErr(err error, n int) error {
	if err == io.EOF && n > 0 {
		return io.ErrUnexpectedEOF
	}
	return err
}
