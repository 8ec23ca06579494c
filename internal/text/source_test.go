package text

import "testing"

func TestAppendSource(t *testing.T) {
	for _, tt := range []struct {
		block, line, index int
		offset             int64
		part, want         string
	}{
		{2, 31, 5, 900, "", "block 2 (line 31)"},
		{1, 1, 1, 0, "certificate 2", "block 1 (line 1), certificate 2"},
		{0, 0, 3, 2048, "", "object 3 (byte 2048)"},
		{0, 0, 1, 0, "private key 1", "object 1 (byte 0), private key 1"},
		{0, 7, 7, 400, "", "line 7"},
	} {
		if got := string(AppendSource([]byte("x: "), tt.block, tt.line, tt.index, tt.offset, tt.part)); got != "x: "+tt.want {
			t.Errorf("AppendSource(%d, %d, %d, %d, %q) = %q, want %q", tt.block, tt.line, tt.index, tt.offset, tt.part, got, "x: "+tt.want)
		}
	}
}
