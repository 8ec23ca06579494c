//go:build !race

package pkbf

// dataByte returns data[i]: a plain load, a Writable's too (see query.go).
func (c *core) dataByte(data []byte, i uint64) byte { return data[i] }
