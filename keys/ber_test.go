package keys

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/pkbf/pkbf/internal/der"
	"github.com/pkbf/pkbf/internal/testkit"
)

// berElem builds a constructed element of the children given: in the
// indefinite form (then ended by two zero bytes) or in DER.
func berElem(tag byte, indefinite bool, children ...[]byte) []byte {
	content := bytes.Join(children, nil)
	if indefinite {
		return append(append([]byte{tag, 0x80}, content...), 0, 0)
	}
	return append(der.AppendHeader(nil, tag, len(content)), content...)
}

// berPrim builds a primitive element in DER.
func berPrim(tag byte, content []byte) []byte {
	return append(der.AppendHeader(nil, tag, len(content)), content...)
}

// berLong re-frames a DER element with its length in n bytes, more than
// it needs (BER allows it, DER does not).
func berLong(element []byte, n int) []byte {
	d := der.Reader(element)
	tag, _, content, ok := d.Next()
	if !ok {
		panic("berLong: not a DER element")
	}
	out := []byte{tag, 0x80 | byte(n)}
	for i := n - 1; i >= 0; i-- {
		out = append(out, byte(len(content)>>(8*i)))
	}
	return append(out, content...)
}

// testSignedData is a PKCS#7 SignedData ContentInfo holding certs, its
// four container levels indefinite where indefinite says so (by level),
// with eContent given as it is (nil: none).
func testSignedData(certs [][]byte, eContent []byte, indefinite [4]bool) []byte {
	encap := [][]byte{berPrim(der.TagOID, oidPKCS7Data)}
	if eContent != nil {
		encap = append(encap, eContent)
	}
	signed := berElem(der.TagSequence, indefinite[2],
		berPrim(der.TagInteger, []byte{1}),
		berElem(0x31, indefinite[3]),
		berElem(der.TagSequence, indefinite[3], encap...),
		berElem(der.TagContext0, indefinite[3], certs...),
		berElem(0x31, indefinite[3]),
	)
	return berElem(der.TagSequence, indefinite[0],
		berPrim(der.TagOID, oidPKCS7SignedData),
		berElem(der.TagContext0, indefinite[1], signed))
}

// testCertDER is a certificate for the BER tests.
func testCertDER(t testing.TB) []byte {
	t.Helper()
	return testkit.ReadFile(t, "../testdata/keys/p256.cert.der")
}

// TestBERToDER: the container's levels, indefinite or with long lengths,
// become DER; what is below them is copied byte for byte, a certificate
// in BER included (it is then refused, as it is anywhere); input that is
// not one BER element is an error saying why.
func TestBERToDER(t *testing.T) {
	cert := testCertDER(t)
	want := testSignedData([][]byte{cert, cert}, nil, [4]bool{})
	// Content below the container, in BER: copied as it is.
	berContent := berElem(der.TagContext0, true, berElem(0x24, true, berPrim(der.TagOctetString, []byte("hello"))))
	berCert := berElem(der.TagSequence, true, cert[4:]) // a certificate's fields in an indefinite SEQUENCE
	long := func(b []byte) []byte { return berLong(b, 4) }
	version := berPrim(der.TagInteger, []byte{1})
	tests := []struct {
		name string
		in   []byte
		want []byte
	}{
		{"DER unchanged", want, want},
		{"indefinite ContentInfo", testSignedData([][]byte{cert, cert}, nil, [4]bool{true}), want},
		{"indefinite at every container level", testSignedData([][]byte{cert, cert}, nil, [4]bool{true, true, true, true}), want},
		{"indefinite content below the container",
			testSignedData([][]byte{cert}, berContent, [4]bool{true, true, true, true}),
			testSignedData([][]byte{cert}, berContent, [4]bool{})},
		{"a BER certificate is copied as it is",
			testSignedData([][]byte{berCert}, nil, [4]bool{true, true, true, true}),
			testSignedData([][]byte{berCert}, nil, [4]bool{})},
		{"long lengths at every container level",
			long(berElem(der.TagSequence, false, berPrim(der.TagOID, oidPKCS7SignedData), long(berElem(der.TagContext0, false, long(version))))),
			berElem(der.TagSequence, false, berPrim(der.TagOID, oidPKCS7SignedData), berElem(der.TagContext0, false, version))},
		{"long lengths below the container are kept",
			berElem(der.TagSequence, true, berElem(der.TagSequence, true, berElem(der.TagSequence, true, berElem(der.TagSequence, true, long(version))))),
			berElem(der.TagSequence, false, berElem(der.TagSequence, false, berElem(der.TagSequence, false, berElem(der.TagSequence, false, long(version)))))},
		{"high tag number", berElem(der.TagSequence, true, []byte{0x9f, 0x81, 0x00, 0x01, 0x07}), []byte{0x30, 0x05, 0x9f, 0x81, 0x00, 0x01, 0x07}},
		{"empty indefinite element", []byte{0x30, 0x80, 0, 0}, []byte{0x30, 0x00}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := berToDER(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, tt.want) {
				t.Fatalf("berToDER =\n%x\nwant\n%x", got, tt.want)
			}
			if again, err := berToDER(got); err != nil || !bytes.Equal(again, got) {
				t.Fatalf("berToDER of its own output = %x, %v", again, err)
			}
		})
	}
}

// nested is a NULL in n SEQUENCEs of indefinite length: elements at the
// levels 0 to n.
func nested(n int) []byte {
	b := []byte{0x05, 0x00}
	for range n {
		b = berElem(der.TagSequence, true, b)
	}
	return b
}

func TestBERToDERInvalid(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", "cut short in its header"},
		{"one byte", "\x30", "cut short in its header"},
		{"no end-of-contents", "\x30\x80\x02\x01\x01", "no end-of-contents"},
		{"end-of-contents cut", "\x30\x80\x02\x01\x01\x00", "no end-of-contents"},
		{"end-of-contents alone", "\x00\x00", "end-of-contents outside"},
		{"end-of-contents in a definite element", "\x30\x02\x00\x00", "end-of-contents outside"},
		{"primitive of indefinite length", "\x04\x80\x00\x00", "primitive element has an indefinite length"},
		{"length in 5 bytes", "\x30\x85\x00\x00\x00\x00\x01\x00", "length takes 5 bytes"},
		{"length byte 0xff", "\x30\xff", "0xff is reserved"},
		{"length past the end", "\x30\x80\x04\x06abc\x00\x00", "declares 6 bytes of content, 5 remain"},
		{"4-byte length of 2 GiB", "\x30\x80\x04\x84\x7f\xff\xff\xff\x00\x00", "declares 2147483647 bytes"},
		{"4-byte length of 4 GiB", "\x30\x80\x04\x84\xff\xff\xff\xff\x00\x00", "declares 4294967295 bytes"},
		{"length cut", "\x30\x82\x01", "cut short in its length"},
		{"high tag number cut", "\x3f\x81", "cut short"},
		{"high tag number of 5 bytes", "\x3f\x81\x81\x81\x81\x01\x00", "more than 4 bytes"},
		{"bytes after the element", "\x30\x80\x00\x00\x01", "1 bytes after the element"},
		{"nested past the limit", string(nested(maxBERDepth + 1)), "nest more than 24 deep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := berToDER([]byte(tt.in))
			var be *berError
			if err == nil || out != nil || !errors.As(err, &be) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("berToDER = %x, %v; want an error saying %q", out, err, tt.want)
			}
		})
	}
	// The other side of the nesting limit.
	if _, err := berToDER(nested(maxBERDepth)); err != nil {
		t.Fatalf("elements nested %d deep: %v", maxBERDepth, err)
	}
}

// TestBERToDERAllocation: a length declaring gigabytes costs nothing; the
// pass allocates in proportion to its input.
func TestBERToDERAllocation(t *testing.T) {
	in := []byte("\x30\x80\x30\x80\x04\x84\x7f\xff\xff\xff\x00\x00\x00\x00")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range 100 {
		berToDER(in)
		readBER(bufio.NewReaderSize(bytes.NewReader(in), 16), maxObjectSize)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Fatalf("100 passes over %d bytes declaring 2 GiB allocated %d bytes", len(in), n)
	}
}

// TestReadBER: the streaming reader takes exactly the element, however
// the stream is cut into reads, and no byte of what follows; it stops at
// its limit, and at a stream that ends inside the element.
func TestReadBER(t *testing.T) {
	cert := testCertDER(t)
	obj := testSignedData([][]byte{cert}, berElem(der.TagContext0, true, berElem(0x24, true, berPrim(der.TagOctetString, []byte("hi")))), [4]bool{true, true, true, true})
	next := berPrim(der.TagSequence, []byte{2, 1, 5})
	for _, oneByte := range []bool{false, true} {
		var r = bytes.NewReader(append(bytes.Clone(obj), next...))
		br := bufio.NewReaderSize(r, 16)
		if oneByte {
			br = bufio.NewReaderSize(iotest.OneByteReader(r), 16)
		}
		got, err := readBER(br, maxObjectSize)
		if err != nil || !bytes.Equal(got, obj) {
			t.Fatalf("readBER = %x, %v; want the object", got, err)
		}
		if rest, _ := io.ReadAll(br); !bytes.Equal(rest, next) {
			t.Fatalf("after readBER the stream holds %x, want %x", rest, next)
		}
	}
	for _, tt := range []struct {
		name  string
		in    []byte
		limit int
		want  error
	}{
		{"at the limit", obj, len(obj), nil},
		{"one byte past the limit", obj, len(obj) - 1, errBERTooLarge},
		{"a definite length past the limit", []byte("\x30\x80\x04\x84\x7f\xff\xff\xff"), maxObjectSize, errBERTooLarge},
		{"cut before its end-of-contents", obj[:len(obj)-1], maxObjectSize, errBERTruncated},
		{"cut in a definite element", obj[:len(obj)/2], maxObjectSize, errBERTruncated},
		{"cut in a header", obj[:1], maxObjectSize, errBERTruncated},
	} {
		got, err := readBER(bufio.NewReaderSize(bytes.NewReader(tt.in), 16), tt.limit)
		if err != tt.want || (err == nil && !bytes.Equal(got, tt.in)) {
			t.Errorf("%s: readBER = %d bytes, %v; want %v", tt.name, len(got), err, tt.want)
		}
	}
	if _, err := readBER(bufio.NewReader(bytes.NewReader(nested(maxBERDepth+1))), maxObjectSize); err == nil || !strings.Contains(err.Error(), "nest more than") {
		t.Errorf("readBER of elements nested too deep: %v", err)
	}
	if _, err := readBER(bufio.NewReader(iotest.ErrReader(errors.New("disk on fire"))), maxObjectSize); err == nil || err.Error() != "disk on fire" {
		t.Errorf("readBER of a failing reader: %v, want its error", err)
	}
}

func FuzzBERToDER(f *testing.F) {
	cert := testCertDER(f)
	f.Add(testSignedData([][]byte{cert}, nil, [4]bool{true, true, true, true}))
	f.Add(testSignedData([][]byte{cert}, berElem(der.TagContext0, true, berElem(0x24, true, berPrim(der.TagOctetString, []byte("hi")))), [4]bool{true, false, true, false}))
	f.Add(nested(maxBERDepth))
	if b, err := os.ReadFile(pkcs7Vector); err == nil {
		if block, ok := decodePEMBlock(textOf(b)); ok {
			f.Add(block.der)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		out, err := berToDER(b)
		// The streaming reader finds the same end as the pass.
		if len(b) > 1 && b[1] == 0x80 {
			read, rerr := readBER(bufio.NewReaderSize(bytes.NewReader(b), 16), maxObjectSize)
			n, lerr := berLen(b, 0)
			if (rerr == nil) != (lerr == nil) || (rerr == nil && len(read) != n) {
				t.Fatalf("readBER read %d bytes, %v; berLen says %d, %v", len(read), rerr, n, lerr)
			}
		}
		if err != nil {
			var be *berError
			if out != nil || !errors.As(err, &be) {
				t.Fatalf("failed pass returned %x, %v", out, err)
			}
			return
		}
		if len(out) > len(b)+len(b)/4+8 {
			t.Fatalf("%d bytes became %d", len(b), len(out))
		}
		again, err := berToDER(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("the pass is not idempotent: %x became %x, %v", out, again, err)
		}
		// Its container levels are DER: der.Reader reads them.
		var walk func(b []byte, level int)
		walk = func(b []byte, level int) {
			d := der.Reader(b)
			for !d.Empty() {
				at := d[0]
				tag, _, content, ok := d.Next()
				if !ok {
					if at&0x1f == 0x1f { // der.Reader reads no high tag numbers
						return
					}
					t.Fatalf("level %d of the output is not DER: %x", level, b)
				}
				if tag&0x20 != 0 && level+1 < berContainerLevels {
					walk(content, level+1)
				}
			}
		}
		walk(out, 0)
	})
}
