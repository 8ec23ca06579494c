package keycheck

import (
	"errors"
	"testing"

	"github.com/pkbf/pkbf/keys"
	"github.com/pkbf/pkbf/weakkeys"
)

// TestTally: a Tally counts verdicts by what they say and says it as pkbf
// check's summary does, naming the weak keys only with the weak-key
// checks, and the keys probably compromised only with a filter.
func TestTally(t *testing.T) {
	weak := []weakkeys.Finding{{Rule: weakkeys.RuleROCA, Reason: "roca"}}
	unsupported := errors.Join(keys.ErrUnsupportedKey, keys.ErrInvalidKey)
	for _, tc := range []struct {
		name     string
		verdicts []Verdict
		want     string
	}{
		{"none", nil, "0 keys: 0 probably, 0 no"},
		{"filter", []Verdict{{Probably: true}, {}, {Err: errors.New("x")}}, "2 keys: 1 probably, 1 no; 1 object not checked: 1 unreadable"},
		{"filter and weak", []Verdict{{Probably: true, Findings: weak, checks: checksWeak}, {Findings: weak}, {}, {Err: unsupported, Findings: weak}},
			"4 keys: 1 probably, 2 weak, 1 no; 1 object not checked: 1 unsupported"},
		{"weak alone", []Verdict{{Findings: weak, checks: checksWeak | checksNoFilter}, {}}, "2 keys: 1 weak, 1 no"},
		{"confirm", []Verdict{{Probably: true, confirming: true, Confirmation: Confirmation{Err: errors.New("x")}}, {Err: errors.Join(keys.ErrEncryptedKey, keys.ErrInvalidKey)}},
			"1 key: 1 probably, 0 no (1 unconfirmed); 1 object not checked: 1 encrypted"},
	} {
		var tl Tally
		for i := range tc.verdicts {
			tl.Add(&tc.verdicts[i])
		}
		if got := tl.String(); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
