//go:build !amd64 || purego

package xxh64

func useVector() bool { return false }

func canVector() bool { return false }

func sum2Vector(b []byte) (uint64, uint64) { return sum2Scalar(b) }

func sum2BatchVector(keys [][]byte, s0, s1 []uint64) {
	for i, k := range keys {
		s0[i], s1[i] = sum2Scalar(k)
	}
}
