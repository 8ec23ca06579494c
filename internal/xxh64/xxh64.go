// Package xxh64 computes the two hashes a pkbfv1 query needs, XXH64 of a
// key with seed 0 and with seed 1, together: the two share every 32-byte
// stripe of the key and differ only in their accumulators, so one pass
// over the key serves both. On amd64 CPUs where AVX-512's 64-bit multiply
// is cheap (see useVector) a stripe's four lanes for both seeds fill one
// 512-bit register, and several keys are hashed in lockstep; elsewhere,
// and under the purego build tag, it is github.com/cespare/xxhash/v2,
// which stays the reference the tests hold both paths to.
package xxh64

import "github.com/cespare/xxhash/v2"

// Sum2 returns XXH64(b) with seed 0 and with seed 1.
func Sum2(b []byte) (s0, s1 uint64) {
	if vector {
		return sum2Vector(b)
	}
	return sum2Scalar(b)
}

// Sum2Batch sets s0[i], s1[i] = Sum2(keys[i]) for every key; s0 and s1
// must be at least as long as keys.
func Sum2Batch(keys [][]byte, s0, s1 []uint64) {
	_, _ = s0[:len(keys)], s1[:len(keys)]
	if vector {
		sum2BatchVector(keys, s0, s1)
		return
	}
	for i, k := range keys {
		s0[i], s1[i] = sum2Scalar(k)
	}
}

// Vector reports whether Sum2 and Sum2Batch use the vector path.
func Vector() bool { return vector }

// vector is whether the vector path is in use: set at start (see
// useVector), and by tests that run both paths.
var vector = useVector()

func sum2Scalar(b []byte) (uint64, uint64) {
	var d xxhash.Digest
	d.ResetWithSeed(1)
	d.Write(b)
	return xxhash.Sum64(b), d.Sum64()
}

// Use makes Sum2 and Sum2Batch take the vector path, where the CPU can
// run it, or the scalar one, and returns what restores the choice: for
// the tests of packages that hash through this one, so that both paths
// run on machines that have both.
func Use(vectorPath bool) (restore func()) {
	was := vector
	vector = vectorPath && canVector()
	return func() { vector = was }
}
