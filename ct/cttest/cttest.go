// Package cttest makes Certificate Transparency logs for tests: entries
// (certificates and precertificates, some of whose keys are in a filter),
// written as a Static CT log's tiles or served as an RFC 6962 log.
package cttest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"filippo.io/sunlight"
	"filippo.io/torchwood"
	ct "github.com/google/certificate-transparency-go"
	cttls "github.com/google/certificate-transparency-go/tls"
	"github.com/transparency-dev/merkle/rfc6962"
	"github.com/transparency-dev/merkle/testonly"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/pkbf/pkbf"
)

// fixture is a log's worth of entries made for a test: certificates and
// precertificates, some of whose keys are in a filter.
type Fixture struct {
	Entries []Entry
	Planted map[int64]bool // the entries whose key the filter holds
	Filter  string         // the filter's path
	CAKey   *ecdsa.PrivateKey
	CA      *x509.Certificate
	// Uncovered, when set, is the precertificate every precertificate
	// entry carries outside its Merkle leaf (a Static CT entry's
	// pre_certificate, an RFC 6962 entry's extra_data) in place of its
	// own: a log that changes what its tree does not cover. Set it
	// before WriteStatic or NewRFC6962Server.
	Uncovered []byte

	issue      func(serial int, pub crypto.PublicKey, precert bool) Entry
	clean, bad []crypto.PublicKey
}

// Precert returns a new precertificate (not an entry of the log) for one
// of the keys in the filter, or for a key that is not.
func (fx *Fixture) Precert(planted bool) []byte {
	keys := fx.clean
	if planted {
		keys = fx.bad
	}
	return fx.issue(1<<30, keys[0], true).DER
}

// Cert returns a new certificate (not an entry of the log, with a serial
// none of them has) for one of the keys in the filter, or for a key that
// is not: what a hostile log may serve in place of an entry.
func (fx *Fixture) Cert(planted bool) []byte {
	keys := fx.clean
	if planted {
		keys = fx.bad
	}
	return fx.issue(1<<29, keys[0], false).DER
}

// An Entry is one of a Fixture's entries.
type Entry struct {
	DER     []byte // the certificate, or the precertificate
	Precert bool
	TBS     []byte // a precertificate's TBSCertificate
	Time    int64  // milliseconds since the epoch
}

var poisonOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11129, 2, 4, 3}

// NewFixture makes n entries from a pool of distinct certificates (a
// cycle of pool), every plantEvery-th one (from 7 on) for one of a few
// keys put in the filter; a third of them are precertificates.
func NewFixture(t testing.TB, n, pool, plantEvery int) *Fixture {
	t.Helper()
	fx := &Fixture{Planted: map[int64]bool{}}
	fx.CAKey, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pkbf CT test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(48 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	der, _ := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, fx.CAKey.Public(), fx.CAKey)
	fx.CA, _ = x509.ParseCertificate(der)

	var clean []crypto.PublicKey
	for i := range 16 {
		if i%2 == 0 {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			clean = append(clean, k.Public())
		} else {
			pub, _, _ := ed25519.GenerateKey(rand.Reader)
			clean = append(clean, pub)
		}
	}
	var bad []crypto.PublicKey
	w, _ := pkbf.New(4, 20)
	for i := range 3 {
		var pub crypto.PublicKey
		if i == 1 {
			pub, _, _ = ed25519.GenerateKey(rand.Reader)
		} else {
			k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
			pub = k.Public()
		}
		spki, _ := x509.MarshalPKIXPublicKey(pub)
		w.Add(spki)
		bad = append(bad, pub)
	}
	fx.Filter = filepath.Join(t.TempDir(), "compromised.pkbf")
	if err := w.WriteFile(fx.Filter); err != nil {
		t.Fatal(err)
	}
	issue := func(serial int, pub crypto.PublicKey, precert bool) Entry {
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(serial) + 1000), Subject: pkix.Name{CommonName: fmt.Sprintf("host%d.example", serial)},
			DNSNames: []string{fmt.Sprintf("host%d.example", serial)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if precert {
			tmpl.ExtraExtensions = []pkix.Extension{{Id: poisonOID, Critical: true, Value: asn1.NullBytes}}
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, fx.CA, pub, fx.CAKey)
		if err != nil {
			t.Fatal(err)
		}
		e := Entry{DER: der, Precert: precert}
		if precert {
			c, _ := x509.ParseCertificate(der)
			e.TBS = c.RawTBSCertificate
		}
		return e
	}
	fx.issue, fx.clean, fx.bad = issue, clean, bad
	var cycle []Entry
	for i := range min(pool, n) {
		cycle = append(cycle, issue(i, clean[i%len(clean)], i%3 == 2))
	}
	start := time.Now().UnixMilli()
	for i := range n {
		var e Entry
		if i%plantEvery == 7 {
			e = issue(n+i, bad[(i/plantEvery)%len(bad)], (i/plantEvery)%2 == 1)
			fx.Planted[int64(i)] = true
		} else {
			e = cycle[i%len(cycle)]
		}
		e.Time = start + int64(i)
		fx.Entries = append(fx.Entries, e)
	}
	return fx
}

// WriteStatic writes the first n entries as a Static CT log's tiles and
// checkpoint (unsigned: scanned without a key) into dir.
func (fx *Fixture) WriteStatic(t testing.TB, dir string, n int) {
	t.Helper()
	var hashes []tlog.Hash
	hr := tlog.HashReaderFunc(func(idx []int64) ([]tlog.Hash, error) {
		out := make([]tlog.Hash, len(idx))
		for i, x := range idx {
			out[i] = hashes[x]
		}
		return out, nil
	})
	issuerHash := sha256.Sum256(fx.CA.RawSubjectPublicKeyInfo)
	write := func(path string, b []byte) {
		path = filepath.Join(dir, path)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var data []byte
	for i, fe := range fx.Entries[:n] {
		e := &sunlight.LogEntry{Certificate: fe.DER, LeafIndex: int64(i), Timestamp: fe.Time}
		if fe.Precert {
			e.IsPrecert, e.Certificate, e.PreCertificate, e.IssuerKeyHash = true, fe.TBS, fe.DER, issuerHash
			if fx.Uncovered != nil {
				e.PreCertificate = fx.Uncovered
			}
		}
		h, err := tlog.StoredHashes(int64(i), e.MerkleTreeLeaf(), hr)
		if err != nil {
			t.Fatal(err)
		}
		hashes = append(hashes, h...)
		data = sunlight.AppendTileLeaf(data, e)
		if (i+1)%sunlight.TileWidth == 0 || i+1 == n {
			tile := tlog.Tile{H: sunlight.TileHeight, L: -1, N: int64(i / sunlight.TileWidth), W: i%sunlight.TileWidth + 1}
			write(sunlight.TilePath(tile), data)
			data = data[:0]
		}
	}
	for _, tile := range tlog.NewTiles(sunlight.TileHeight, 0, int64(n)) {
		b, err := tlog.ReadTileData(tile, hr)
		if err != nil {
			t.Fatal(err)
		}
		write(sunlight.TilePath(tile), b)
	}
	root, err := tlog.TreeHash(int64(n), hr)
	if err != nil {
		t.Fatal(err)
	}
	cp := torchwood.Checkpoint{Origin: "pkbf.test/static", Tree: tlog.Tree{N: int64(n), Hash: root}}
	write("checkpoint", []byte(cp.String()+"\n— pkbf.test/static AAAAAA==\n"))
}

// RFC6962Server serves the entries as an RFC 6962 log, encoded with
// certificate-transparency-go's types: a tree head signed with its key
// over the first size entries, get-entries capped at maxBatch, and
// get-proof-by-hash. tamper, when set, changes the entry served at that
// index.
type RFC6962Server struct {
	fx       *Fixture
	Key      *ecdsa.PrivateKey
	tree     *testonly.Tree
	leaves   [][]byte
	extra    [][]byte
	byHash   map[string]int64
	Size     atomic.Int64 // the entries the tree head covers
	MaxBatch int64
	Tamper   atomic.Int64 // index+1, or 0
	// Forged, when it holds a map, serves a leaf of its own (a
	// certificate entry with the entry's timestamp) for each index the
	// map names, holding the certificate there: a log that serves
	// entries its tree does not have.
	Forged   atomic.Pointer[map[int64][]byte]
	Requests atomic.Int64
}

func NewRFC6962Server(t testing.TB, fx *Fixture) *RFC6962Server {
	s := &RFC6962Server{fx: fx, tree: testonly.New(rfc6962.DefaultHasher), byHash: map[string]int64{}, MaxBatch: 100}
	s.Key, _ = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	issuerHash := sha256.Sum256(fx.CA.RawSubjectPublicKeyInfo)
	for i, fe := range fx.Entries {
		te := &ct.TimestampedEntry{Timestamp: uint64(fe.Time), EntryType: ct.X509LogEntryType, X509Entry: &ct.ASN1Cert{Data: fe.DER}}
		var extra any = ct.CertificateChain{Entries: []ct.ASN1Cert{{Data: fx.CA.Raw}}}
		if fe.Precert {
			te.EntryType, te.X509Entry = ct.PrecertLogEntryType, nil
			te.PrecertEntry = &ct.PreCert{IssuerKeyHash: issuerHash, TBSCertificate: fe.TBS}
			precert := fe.DER
			if fx.Uncovered != nil {
				precert = fx.Uncovered
			}
			extra = ct.PrecertChainEntry{PreCertificate: ct.ASN1Cert{Data: precert}, CertificateChain: []ct.ASN1Cert{{Data: fx.CA.Raw}}}
		}
		leaf, err := cttls.Marshal(ct.MerkleTreeLeaf{Version: ct.V1, LeafType: ct.TimestampedEntryLeafType, TimestampedEntry: te})
		if err != nil {
			t.Fatal(err)
		}
		ex, err := cttls.Marshal(extra)
		if err != nil {
			t.Fatal(err)
		}
		s.leaves, s.extra = append(s.leaves, leaf), append(s.extra, ex)
		s.tree.AppendData(leaf)
		s.byHash[string(rfc6962.DefaultHasher.HashLeaf(leaf))] = int64(i)
	}
	s.Size.Store(int64(len(fx.Entries)))
	return s
}

func (s *RFC6962Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	size := s.Size.Load()
	reply := func(v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	switch r.URL.Path {
	case "/ct/v1/get-sth":
		root := s.tree.HashAt(uint64(size))
		sth := ct.SignedTreeHead{Version: ct.V1, TreeSize: uint64(size), Timestamp: uint64(time.Now().UnixMilli())}
		copy(sth.SHA256RootHash[:], root)
		input, _ := ct.SerializeSTHSignatureInput(sth)
		sig, err := cttls.CreateSignature(*s.Key, cttls.SHA256, input)
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		sigBytes, _ := cttls.Marshal(sig)
		reply(ct.GetSTHResponse{TreeSize: sth.TreeSize, Timestamp: sth.Timestamp, SHA256RootHash: root, TreeHeadSignature: sigBytes})
	case "/ct/v1/get-entries":
		start, err1 := strconv.ParseInt(r.FormValue("start"), 10, 64)
		end, err2 := strconv.ParseInt(r.FormValue("end"), 10, 64)
		if err1 != nil || err2 != nil || start < 0 || end < start || start >= size {
			http.Error(w, "bad range", http.StatusBadRequest)
			return
		}
		end = min(end, size-1, start+s.MaxBatch-1)
		var resp ct.GetEntriesResponse
		for i := start; i <= end; i++ {
			leaf := s.leaves[i]
			if s.Tamper.Load() == i+1 {
				// The same entry a millisecond later: another leaf.
				var l ct.MerkleTreeLeaf
				cttls.Unmarshal(leaf, &l)
				l.TimestampedEntry.Timestamp++
				leaf, _ = cttls.Marshal(l)
			}
			if forged := s.Forged.Load(); forged != nil && (*forged)[i] != nil {
				te := &ct.TimestampedEntry{Timestamp: uint64(s.fx.Entries[i].Time), EntryType: ct.X509LogEntryType, X509Entry: &ct.ASN1Cert{Data: (*forged)[i]}}
				leaf, _ = cttls.Marshal(ct.MerkleTreeLeaf{Version: ct.V1, LeafType: ct.TimestampedEntryLeafType, TimestampedEntry: te})
			}
			resp.Entries = append(resp.Entries, ct.LeafEntry{LeafInput: leaf, ExtraData: s.extra[i]})
		}
		reply(resp)
	case "/ct/v1/get-proof-by-hash":
		hash, err := base64.StdEncoding.DecodeString(r.FormValue("hash"))
		treeSize, err2 := strconv.ParseInt(r.FormValue("tree_size"), 10, 64)
		index, ok := s.byHash[string(hash)]
		if err != nil || err2 != nil || !ok || index >= treeSize || treeSize > size {
			http.Error(w, "not found", http.StatusBadRequest)
			return
		}
		proof, err := s.tree.InclusionProof(uint64(index), uint64(treeSize))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		reply(ct.GetProofByHashResponse{LeafIndex: index, AuditPath: proof})
	case "/ct/v1/get-sth-consistency":
		first, err1 := strconv.ParseInt(r.FormValue("first"), 10, 64)
		second, err2 := strconv.ParseInt(r.FormValue("second"), 10, 64)
		if err1 != nil || err2 != nil || first < 0 || second < first || second > size {
			http.Error(w, "bad sizes", http.StatusBadRequest)
			return
		}
		proof, err := s.tree.ConsistencyProof(uint64(first), uint64(second))
		if err != nil {
			http.Error(w, err.Error(), 500)
			return
		}
		reply(ct.GetSTHConsistencyResponse{Consistency: proof})
	default:
		http.NotFound(w, r)
	}
}
