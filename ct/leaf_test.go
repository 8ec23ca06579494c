package ct

import (
	"bytes"
	"crypto/x509"
	"testing"

	ctx509 "github.com/google/certificate-transparency-go/x509"

	"github.com/pkbf/pkbf/ct/cttest"
)

// oracleSPKI is the SubjectPublicKeyInfo certificate-transparency-go's
// x509 parser reads from an entry's leaf: the certificate's, or the
// precertificate's TBSCertificate's.
func oracleSPKI(e Entry) ([]byte, error) {
	parse := ctx509.ParseCertificate
	if e.Precert {
		parse = ctx509.ParseTBSCertificate
	}
	c, err := parse(e.Leaf)
	if err != nil {
		return nil, err
	}
	return c.RawSubjectPublicKeyInfo, nil
}

// The key a scan checks is the one certificate-transparency-go's own
// parser reads from the same leaf, for certificates and for
// precertificates' TBSCertificates; what is not a certificate or a
// TBSCertificate as far as its key gives an error.
func TestLeafSPKIMatchesCTGo(t *testing.T) {
	fx := cttest.NewFixture(t, 60, 60, 7)
	for i, fe := range fx.Entries {
		e := Entry{Index: int64(i), Precert: fe.Precert, Leaf: fe.DER}
		if fe.Precert {
			e.Leaf = fe.TBS
		}
		got, err := e.leafSPKI()
		want, oerr := oracleSPKI(e)
		if err != nil || oerr != nil || !bytes.Equal(got, want) {
			t.Errorf("entry %d (precertificate %v): %x, %v\nct-go: %x, %v", i, fe.Precert, got, err, want, oerr)
		}
		if c, _ := x509.ParseCertificate(fe.DER); !bytes.Equal(got, c.RawSubjectPublicKeyInfo) {
			t.Errorf("entry %d: not the key of the precertificate or certificate submitted", i)
		}
	}
	cert, tbs := fx.Entries[0].DER, fx.Entries[2].TBS
	for _, c := range []struct {
		name    string
		precert bool
		leaf    []byte
	}{
		{"an empty certificate", false, nil},
		{"an empty TBSCertificate", true, nil},
		{"bytes after the certificate", false, append(append([]byte(nil), cert...), 0)},
		{"bytes after the TBSCertificate", true, append(append([]byte(nil), tbs...), 0)},
		{"a truncated certificate", false, cert[:len(cert)-1]},
		{"a truncated TBSCertificate", true, tbs[:len(tbs)-1]},
		{"a TBSCertificate given as a certificate", false, tbs},
		{"a certificate given as a TBSCertificate", true, cert},
		{"a TBSCertificate cut before its key", true, []byte{0x30, 0x03, 0x02, 0x01, 0x01}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := Entry{Precert: c.precert, Leaf: c.leaf}
			if spki, err := e.leafSPKI(); err == nil {
				t.Errorf("read key %x", spki)
			}
			if _, err := oracleSPKI(e); err == nil {
				t.Errorf("ct-go reads it: a disagreement")
			}
		})
	}
}

// FuzzLeafSPKI: on any leaf, leafSPKI does not panic, and where
// certificate-transparency-go's parser reads a key, leafSPKI reads the
// same bytes.
func FuzzLeafSPKI(f *testing.F) {
	fx := cttest.NewFixture(f, 6, 6, 7)
	for _, fe := range fx.Entries {
		f.Add(false, fe.DER)
		if fe.Precert {
			f.Add(true, fe.TBS)
		}
	}
	f.Fuzz(func(t *testing.T, precert bool, leaf []byte) {
		e := Entry{Precert: precert, Leaf: leaf}
		got, err := e.leafSPKI()
		e.details()
		if want, oerr := oracleSPKI(e); oerr == nil && (err != nil || !bytes.Equal(got, want)) {
			t.Errorf("leafSPKI: %x, %v; ct-go: %x", got, err, want)
		}
	})
}
