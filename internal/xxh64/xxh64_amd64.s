//go:build amd64 && !purego

#include "textflag.h"

// XXH64's constants, each alone for broadcasts.
DATA prime1<>+0(SB)/8, $0x9E3779B185EBCA87
GLOBL prime1<>(SB), RODATA|NOPTR, $8
DATA prime2<>+0(SB)/8, $0xC2B2AE3D27D4EB4F
GLOBL prime2<>(SB), RODATA|NOPTR, $8
DATA prime3<>+0(SB)/8, $0x165667B19E3779F9
GLOBL prime3<>(SB), RODATA|NOPTR, $8
DATA prime4<>+0(SB)/8, $0x85EBCA77C2B2AE63
GLOBL prime4<>(SB), RODATA|NOPTR, $8
DATA prime5<>+0(SB)/8, $0x27D4EB2F165667C5
GLOBL prime5<>(SB), RODATA|NOPTR, $8

// The accumulators before the first stripe, seed 0's v1..v4 then seed
// 1's: seed+prime1+prime2, seed+prime2, seed, seed-prime1.
DATA initial<>+0(SB)/8, $0x60EA27EEADC0B5D6
DATA initial<>+8(SB)/8, $0xC2B2AE3D27D4EB4F
DATA initial<>+16(SB)/8, $0
DATA initial<>+24(SB)/8, $0x61C8864E7A143579
DATA initial<>+32(SB)/8, $0x60EA27EEADC0B5D7
DATA initial<>+40(SB)/8, $0xC2B2AE3D27D4EB50
DATA initial<>+48(SB)/8, $1
DATA initial<>+56(SB)/8, $0x61C8864E7A14357A
GLOBL initial<>(SB), RODATA|NOPTR, $64

// A key shorter than a stripe starts each hash at seed+prime5.
DATA short<>+0(SB)/8, $0x27D4EB2F165667C5
DATA short<>+8(SB)/8, $0x27D4EB2F165667C6
GLOBL short<>(SB), RODATA|NOPTR, $16

// The rotations of v1..v4 summed into a long key's hash.
DATA rotations<>+0(SB)/8, $1
DATA rotations<>+8(SB)/8, $7
DATA rotations<>+16(SB)/8, $12
DATA rotations<>+24(SB)/8, $18
DATA rotations<>+32(SB)/8, $1
DATA rotations<>+40(SB)/8, $7
DATA rotations<>+48(SB)/8, $12
DATA rotations<>+56(SB)/8, $18
GLOBL rotations<>(SB), RODATA|NOPTR, $64

// Lane i of both seeds side by side: (seed 0's vi, seed 1's vi) in the
// ith 128 bits, so that the rest runs on both seeds in one xmm register.
DATA pairs<>+0(SB)/8, $0
DATA pairs<>+8(SB)/8, $4
DATA pairs<>+16(SB)/8, $1
DATA pairs<>+24(SB)/8, $5
DATA pairs<>+32(SB)/8, $2
DATA pairs<>+40(SB)/8, $6
DATA pairs<>+48(SB)/8, $3
DATA pairs<>+56(SB)/8, $7
GLOBL pairs<>(SB), RODATA|NOPTR, $64

// CONSTANTS loads what the routines below expect in registers: Z1 prime1,
// Z2 prime2 (their low xmm for the two-lane steps), X9 prime3, X12 prime4,
// X13 prime5, Z14 the pairs permutation.
#define CONSTANTS \
	VPBROADCASTQ prime1<>(SB), Z1 \
	VPBROADCASTQ prime2<>(SB), Z2 \
	VPBROADCASTQ prime3<>(SB), X9 \
	VPBROADCASTQ prime4<>(SB), X12 \
	VPBROADCASTQ prime5<>(SB), X13 \
	VMOVDQU64    pairs<>(SB), Z14

// One XXH64 round on both seeds' four lanes at once: acc =
// rotl(acc + x*prime2, 31) * prime1, with x one 32-byte stripe broadcast
// to both halves of the register. x*prime2 does not wait for acc, so a
// stripe's chain is an add, a rotate and a multiply.
#define ROUND(src, acc, x) \
	VBROADCASTI64X4 src, x \
	VPMULLQ         Z2, x, x \
	VPADDQ          x, acc, acc \
	VPROLQ          $31, acc, acc \
	VPMULLQ         Z1, acc, acc

// A merge step of a long key's hash h (two lanes: seed 0, seed 1) with
// the round of lane i of both seeds, r: h = (h ^ r) * prime1 + prime4.
#define MERGE(r, h) \
	VPXORQ  r, h, h \
	VPMULLQ X1, h, h \
	VPADDQ  X12, h, h

// key<> completes a key: its remaining stripes, then both hashes.
// In: Z0 the accumulators after the stripes so far (any value if the key
// has none), SI the next stripe, CX the stripes left, DX the key's length,
// and the CONSTANTS. Out: X4 = (seed 0's hash, seed 1's). It uses AX, SI,
// CX, X3, Z5, Z7, X8, X10, X11.
TEXT key<>(SB), NOSPLIT|NOFRAME, $0
	TESTQ CX, CX
	JZ    finish

stripes:
	ROUND((SI), Z0, Z3)
	ADDQ $32, SI
	DECQ CX
	JNZ  stripes

finish:
	CMPQ DX, $32
	JB   shortkey

	// h = rotl(v1,1) + rotl(v2,7) + rotl(v3,12) + rotl(v4,18), per seed;
	// the rounds of v1..v4 for the merge steps meanwhile.
	VPMULLQ       Z2, Z0, Z5
	VPROLVQ       rotations<>(SB), Z0, Z7
	VPROLQ        $31, Z5, Z5
	VPERMQ        Z7, Z14, Z7
	VPMULLQ       Z1, Z5, Z5
	VEXTRACTI64X4 $1, Z7, Y8
	VPERMQ        Z5, Z14, Z5
	VPADDQ        Y8, Y7, Y7
	VEXTRACTI128  $1, Y7, X8
	VPADDQ        X8, X7, X4
	MERGE(X5, X4)
	VEXTRACTI64X2 $1, Z5, X10
	MERGE(X10, X4)
	VEXTRACTI64X2 $2, Z5, X10
	MERGE(X10, X4)
	VEXTRACTI64X2 $3, Z5, X10
	MERGE(X10, X4)
	JMP tail

shortkey:
	VMOVDQU64 short<>(SB), X4

tail:
	VPBROADCASTQ DX, X10
	VPADDQ       X10, X4, X4
	MOVQ         DX, CX
	ANDQ         $31, CX

eights:
	CMPQ         CX, $8
	JB           four
	VPBROADCASTQ (SI), X10
	VPMULLQ      X2, X10, X10
	VPROLQ       $31, X10, X10
	VPMULLQ      X1, X10, X10
	VPXORQ       X10, X4, X4
	VPROLQ       $27, X4, X4
	VPMULLQ      X1, X4, X4
	VPADDQ       X12, X4, X4
	ADDQ         $8, SI
	SUBQ         $8, CX
	JMP          eights

four:
	CMPQ         CX, $4
	JB           bytes
	MOVL         (SI), AX
	VPBROADCASTQ AX, X10
	VPMULLQ      X1, X10, X10
	VPXORQ       X10, X4, X4
	VPROLQ       $23, X4, X4
	VPMULLQ      X2, X4, X4
	VPADDQ       X9, X4, X4
	ADDQ         $4, SI
	SUBQ         $4, CX

bytes:
	TESTQ        CX, CX
	JZ           avalanche
	MOVBQZX      (SI), AX
	VPBROADCASTQ AX, X10
	VPMULLQ      X13, X10, X10
	VPXORQ       X10, X4, X4
	VPROLQ       $11, X4, X4
	VPMULLQ      X1, X4, X4
	INCQ         SI
	DECQ         CX
	JMP          bytes

avalanche:
	VPSRLQ  $33, X4, X10
	VPXORQ  X10, X4, X4
	VPMULLQ X2, X4, X4
	VPSRLQ  $29, X4, X10
	VPXORQ  X10, X4, X4
	VPMULLQ X9, X4, X4
	VPSRLQ  $32, X4, X10
	VPXORQ  X10, X4, X4
	RET

// func sum2(p *byte, n int) (h0, h1 uint64)
TEXT ·sum2(SB), NOSPLIT, $0-32
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), DX
	MOVQ DX, CX
	SHRQ $5, CX
	CONSTANTS
	VMOVDQU64 initial<>(SB), Z0
	CALL      key<>(SB)
	VMOVQ     X4, h0+16(FP)
	VPEXTRQ   $1, X4, h1+24(FP)
	VZEROUPPER
	RET

// func sum2x4(p *[4]*byte, n *[4]int, h *[8]uint64)
//
// Four keys' common stripes in lockstep, four independent chains of
// multiplies, then each key's own rest (key<>), one after another: their
// chains overlap in the CPU as far as it looks ahead.
TEXT ·sum2x4(SB), NOSPLIT, $0-24
	MOVQ p+0(FP), BX
	MOVQ n+8(FP), DI
	CONSTANTS
	VMOVDQU64 initial<>(SB), Z0
	VMOVDQA64 Z0, Z15
	VMOVDQA64 Z0, Z16
	VMOVDQA64 Z0, Z17
	VMOVDQA64 Z0, Z18

	// R13 = the common stripes; R8..R11 the keys.
	MOVQ  0(DI), R13
	MOVQ  8(DI), AX
	CMPQ  AX, R13
	CMOVQLT AX, R13
	MOVQ  16(DI), AX
	CMPQ  AX, R13
	CMOVQLT AX, R13
	MOVQ  24(DI), AX
	CMPQ  AX, R13
	CMOVQLT AX, R13
	SHRQ  $5, R13
	MOVQ  0(BX), R8
	MOVQ  8(BX), R9
	MOVQ  16(BX), R10
	MOVQ  24(BX), R11
	MOVQ  R13, CX
	TESTQ CX, CX
	JZ    rest

lockstep:
	ROUND((R8), Z15, Z19)
	ROUND((R9), Z16, Z20)
	ROUND((R10), Z17, Z21)
	ROUND((R11), Z18, Z22)
	ADDQ $32, R8
	ADDQ $32, R9
	ADDQ $32, R10
	ADDQ $32, R11
	DECQ CX
	JNZ  lockstep

rest:
	MOVQ h+16(FP), R12

	VMOVDQA64 Z15, Z0
	MOVQ      R8, SI
	MOVQ      0(DI), DX
	MOVQ      DX, CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	CALL      key<>(SB)
	VMOVDQU64 X4, 0(R12)

	VMOVDQA64 Z16, Z0
	MOVQ      R9, SI
	MOVQ      8(DI), DX
	MOVQ      DX, CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	CALL      key<>(SB)
	VMOVDQU64 X4, 16(R12)

	VMOVDQA64 Z17, Z0
	MOVQ      R10, SI
	MOVQ      16(DI), DX
	MOVQ      DX, CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	CALL      key<>(SB)
	VMOVDQU64 X4, 32(R12)

	VMOVDQA64 Z18, Z0
	MOVQ      R11, SI
	MOVQ      24(DI), DX
	MOVQ      DX, CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	CALL      key<>(SB)
	VMOVDQU64 X4, 48(R12)

	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (eax, ebx, ecx, edx uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL leaf+0(FP), AX
	MOVL sub+4(FP), CX
	CPUID
	MOVL AX, eax+8(FP)
	MOVL BX, ebx+12(FP)
	MOVL CX, ecx+16(FP)
	MOVL DX, edx+20(FP)
	RET
