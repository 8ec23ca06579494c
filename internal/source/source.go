// Package source words where a key came from in its input, for keys.Key's
// Source and for pkbf check, which writes it for every key without
// building a string.
package source

import "strconv"

// Append appends where an object starts to b: "block 2 (line 31)" for the
// PEM block numbered block (from 1), "object 3 (byte 2048)" for the DER
// object numbered index, which has no line, and "line 7" for a text line;
// then ", " and part, if part is not empty.
func Append(b []byte, block, line, index int, offset int64, part string) []byte {
	switch {
	case block > 0:
		b = strconv.AppendInt(append(b, "block "...), int64(block), 10)
		b = strconv.AppendInt(append(b, " (line "...), int64(line), 10)
		b = append(b, ')')
	case line == 0:
		b = strconv.AppendInt(append(b, "object "...), int64(index), 10)
		b = strconv.AppendInt(append(b, " (byte "...), offset, 10)
		b = append(b, ')')
	default:
		b = strconv.AppendInt(append(b, "line "...), int64(line), 10)
	}
	if part != "" {
		b = append(append(b, ", "...), part...)
	}
	return b
}
