//go:build amd64 && !purego

package xxh64

import (
	"os"
	"unsafe"

	"golang.org/x/sys/cpu"
)

// sum2 returns both hashes of the n bytes at p.
//
//go:noescape
func sum2(p *byte, n int) (h0, h1 uint64)

// sum2x4 sets h[2k], h[2k+1] to the hashes of the n[k] bytes at p[k],
// for k in 0..3.
//
//go:noescape
func sum2x4(p *[4]*byte, n *[4]int, h *[8]uint64)

// cpuid returns what the CPUID instruction gives for a leaf and subleaf.
func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)

// useVector decides where the vector path runs: on CPUs with AVX-512
// (F, DQ for VPMULLQ, VL) made by AMD. There VPMULLQ on 512 bits is one
// µop with a latency of 3 cycles (Zen 4, Zen 5), and it measures well
// below the scalar hashes (docs/performance.md). On Intel's AVX-512 parts
// (Skylake-SP to Sapphire Rapids) it is 3 µops with a latency of about
// 15 cycles and one every 1.5 cycles, as uops.info and Agner Fog's tables
// publish: a key's chain of stripes, two multiplies deep each, would take
// longer than the scalar hashes, so they keep those. $PKBF_XXH64=vector
// turns the vector path on wherever the instructions exist (to measure
// it), and =scalar off.
func useVector() bool {
	switch os.Getenv("PKBF_XXH64") {
	case "scalar":
		return false
	case "vector":
		return canVector()
	}
	return canVector() && amd()
}

// canVector reports whether the vector path can run here, chosen or not.
func canVector() bool { return cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL }

// amd reports whether the CPU is AMD's ("AuthenticAMD").
func amd() bool {
	_, b, c, d := cpuid(0, 0)
	return b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163
}

func sum2Vector(b []byte) (uint64, uint64) { return sum2(unsafe.SliceData(b), len(b)) }

// sum2BatchVector hashes keys four at a time (sum2x4), then the keys
// left one at a time.
func sum2BatchVector(keys [][]byte, s0, s1 []uint64) {
	var p [4]*byte
	var n [4]int
	var h [8]uint64
	i := 0
	for ; i+4 <= len(keys); i += 4 {
		for j, k := range keys[i : i+4 : i+4] {
			p[j], n[j] = unsafe.SliceData(k), len(k)
		}
		sum2x4(&p, &n, &h)
		for j := range 4 {
			s0[i+j], s1[i+j] = h[2*j], h[2*j+1]
		}
	}
	for ; i < len(keys); i++ {
		s0[i], s1[i] = sum2Vector(keys[i])
	}
}
