package pkbf

import (
	"testing"

	"github.com/pkbf/pkbf/internal/xxh64"
)

// hashPaths runs f with each way this machine has of hashing keys: both
// hashes in one vector pass, where it can, and two scalar XXH64 calls
// (which ProbablyBatch then computes lazily), so that both run in CI on
// any machine that has them.
func hashPaths(t *testing.T, f func(t *testing.T)) {
	for _, vector := range []bool{true, false} {
		restore := xxh64.Use(vector)
		if vector && !xxh64.Vector() {
			restore()
			continue
		}
		t.Run(map[bool]string{true: "vector", false: "scalar"}[vector], f)
		restore()
	}
}

// The answers of Probably and ProbablyBatch are the same with either way
// of hashing (keycheck's TestHashPaths runs Check both ways).
func TestHashPaths(t *testing.T) {
	hashPaths(t, TestProbablyBatch)
	hashPaths(t, TestProbablyBatchVisits)
	hashPaths(t, TestProbablyNoFalseNegatives)
	hashPaths(t, TestExampleFilters)
}
