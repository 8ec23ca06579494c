package text

import "strconv"

// AppendSource appends where an object starts in its input to b, for
// keys.Key's Source and for every key pkbf check writes, without building
// a string: "block 2 (line 31)" for the
// PEM block numbered block (from 1), "object 3 (byte 2048)" for the DER
// object numbered index, which has no line, and "line 7" for a text line;
// then ", " and part, if part is not empty.
func AppendSource(b []byte, block, line, index int, offset int64, part string) []byte {
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
