package keys

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"

	"github.com/pkbf/pkbf/internal/testkit"
)

// TestKeyForms checks Key.Forms, which parses a DER object's SPKI once,
// against what it saves: Key.SPKI, then Forms on its result. Every object
// of every file under testdata/keys is compared, and a DER stream of the
// cases the test files lack: a key Forms cannot re-encode (a compressed
// point off its curve) and SPKIs that SPKI refuses.
func TestKeyForms(t *testing.T) {
	var inputs [][]byte
	err := filepath.WalkDir(keysDir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			inputs = append(inputs, testkit.ReadFile(t, path))
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	p256 := curveBySSHName("nistp256")
	offCurve := append([]byte{2}, make([]byte, p256.size)...)
	for x := byte(1); ; x++ {
		offCurve[len(offCurve)-1] = x
		if _, _, ok := p256.decodePoint(offCurve); !ok {
			break
		}
	}
	rsa := testkit.ReadFile(t, filepath.Join(keysDir, "rsa2048.spki.der"))
	inputs = append(inputs, bytes.Join([][]byte{
		ecSPKI(p256, offCurve),
		rsa,
		spkiWithKey(t, "p256.spki.der", 64), // a point of no size P-256 has
		buildSPKIRaw(oidECPublicKey, oidDER([]byte{42, 3}), nil),         // an unknown curve, no key
		spkiRSAKey([]byte{0x30, 9, 2, 1, 5, 2, 1, 3, 2, 1, 3}),           // three INTEGERs
		testkit.ReadFile(t, filepath.Join(keysDir, "p256.cert.der")),     // SPKI inside, parsed once
		testkit.ReadFile(t, filepath.Join(keysDir, "ed25519.pkcs8.der")), // SPKI built
	}, nil))

	var parsedOnce, others, unencodable, unreadable int
	for _, in := range inputs {
		s := NewScanner(bytes.NewReader(in))
		for s.Scan() {
			switch sameForms(t, s.Key()) {
			case formsParsedOnce:
				parsedOnce++
			case formsOther:
				others++
			case formsUnencodable:
				unencodable++
			case formsUnreadable:
				unreadable++
			}
		}
	}
	// Each path of Key.Forms must have been taken for the comparison to
	// mean something.
	counts := fmt.Sprintf("%d SPKIs parsed once in DER objects, %d others, %d not re-encodable, %d unreadable", parsedOnce, others, unencodable, unreadable)
	t.Log(counts)
	if parsedOnce < 2 || others == 0 || unencodable == 0 || unreadable < 3 {
		t.Errorf("too few cases of a path: %s", counts)
	}
}

// The paths through Key.Forms that sameForms tells apart.
const (
	formsParsedOnce  = iota // the SPKI of a DER object, as it stands
	formsOther              // any other SPKI
	formsUnencodable        // an SPKI that Forms cannot re-encode
	formsUnreadable         // no SPKI
)

// sameForms fails the test unless k.Forms returns what k.SPKI and then
// Forms do, and says which path it took.
func sameForms(t *testing.T, k Key) int {
	t.Helper()
	spki, canonical, other, err := k.Forms(make([]byte, 0, 8))
	wantSPKI, wantErr := k.SPKI()
	if wantErr != nil {
		if spki != nil || err == nil || err.Error() != wantErr.Error() {
			t.Errorf("%s: Forms = %x, %v; want nil and SPKI's error %v", k.Source(), spki, err, wantErr)
		}
		return formsUnreadable
	}
	if !bytes.Equal(spki, wantSPKI) {
		t.Errorf("%s: Forms' SPKI %x, SPKI's %x", k.Source(), spki, wantSPKI)
	}
	wantCanonical, wantOther, wantErr := Forms(nil, wantSPKI)
	if wantErr != nil {
		if canonical != nil || other != nil || err == nil || err.Error() != wantErr.Error() {
			t.Errorf("%s: Forms = %x, %x, %v; want nil, nil and Forms' error %v", k.Source(), canonical, other, err, wantErr)
		}
		return formsUnencodable
	}
	if err != nil || !bytes.Equal(canonical, wantCanonical) || !bytes.Equal(other, wantOther) {
		t.Errorf("%s: Forms = %x, %x, %v; want %x, %x", k.Source(), canonical, other, err, wantCanonical, wantOther)
	}
	if k.kind == kindDER && bytes.Contains(k.Raw, spki) {
		return formsParsedOnce
	}
	return formsOther
}
