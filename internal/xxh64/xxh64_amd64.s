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

// Constants of sum2x4's finish.
DATA thirtytwo<>+0(SB)/8, $32
GLOBL thirtytwo<>(SB), RODATA|NOPTR, $8
DATA thirtyone<>+0(SB)/8, $31
GLOBL thirtyone<>(SB), RODATA|NOPTR, $8
DATA seven<>+0(SB)/8, $7
GLOBL seven<>(SB), RODATA|NOPTR, $8
DATA three<>+0(SB)/8, $3
GLOBL three<>(SB), RODATA|NOPTR, $8
DATA one<>+0(SB)/8, $1
GLOBL one<>(SB), RODATA|NOPTR, $8
DATA low32<>+0(SB)/8, $0xFFFFFFFF
GLOBL low32<>(SB), RODATA|NOPTR, $8
DATA lowbyte<>+0(SB)/8, $0xFF
GLOBL lowbyte<>(SB), RODATA|NOPTR, $8

// dup<> duplicates four keys' values for both seeds' lanes.
DATA dup<>+0(SB)/8, $0
DATA dup<>+8(SB)/8, $0
DATA dup<>+16(SB)/8, $1
DATA dup<>+24(SB)/8, $1
DATA dup<>+32(SB)/8, $2
DATA dup<>+40(SB)/8, $2
DATA dup<>+48(SB)/8, $3
DATA dup<>+56(SB)/8, $3
GLOBL dup<>(SB), RODATA|NOPTR, $64

// lanebase<> is where lane 2k+s's key's tail starts among the sixteen
// words of Z26:Z27 (four a key), for VPERMI2Q.
DATA lanebase<>+0(SB)/8, $0
DATA lanebase<>+8(SB)/8, $0
DATA lanebase<>+16(SB)/8, $4
DATA lanebase<>+24(SB)/8, $4
DATA lanebase<>+32(SB)/8, $8
DATA lanebase<>+40(SB)/8, $8
DATA lanebase<>+48(SB)/8, $12
DATA lanebase<>+56(SB)/8, $12
GLOBL lanebase<>(SB), RODATA|NOPTR, $64

// words<>+64*i is lanebase<> + i: the ith 8-byte word of each lane's tail.
DATA words<>+0(SB)/8, $0
DATA words<>+8(SB)/8, $0
DATA words<>+16(SB)/8, $4
DATA words<>+24(SB)/8, $4
DATA words<>+32(SB)/8, $8
DATA words<>+40(SB)/8, $8
DATA words<>+48(SB)/8, $12
DATA words<>+56(SB)/8, $12
DATA words<>+64(SB)/8, $1
DATA words<>+72(SB)/8, $1
DATA words<>+80(SB)/8, $5
DATA words<>+88(SB)/8, $5
DATA words<>+96(SB)/8, $9
DATA words<>+104(SB)/8, $9
DATA words<>+112(SB)/8, $13
DATA words<>+120(SB)/8, $13
DATA words<>+128(SB)/8, $2
DATA words<>+136(SB)/8, $2
DATA words<>+144(SB)/8, $6
DATA words<>+152(SB)/8, $6
DATA words<>+160(SB)/8, $10
DATA words<>+168(SB)/8, $10
DATA words<>+176(SB)/8, $14
DATA words<>+184(SB)/8, $14
GLOBL words<>(SB), RODATA|NOPTR, $192

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

// rest<> runs a key's remaining stripes. In: Z0 the accumulators, SI the
// next stripe, CX the stripes left. Out: Z0, SI past the last stripe. It
// uses CX and Z3.
TEXT rest<>(SB), NOSPLIT|NOFRAME, $0
	TESTQ CX, CX
	JZ    done

loop:
	ROUND((SI), Z0, Z3)
	ADDQ $32, SI
	DECQ CX
	JNZ  loop

done:
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
	// Keys of four stripes or more share one finish in eight lanes; for
	// shorter ones, four finishes one after another, whose chains the CPU
	// overlaps, measure faster (BenchmarkSum2).
	CMPQ R13, $4
	JAE  long

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

long:
	// Each key's own remaining stripes, one chain after another.
	MOVQ      0(DI), CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	VMOVDQA64 Z15, Z0
	MOVQ      R8, SI
	CALL      rest<>(SB)
	VMOVDQA64 Z0, Z15
	MOVQ      SI, R8
	MOVQ      8(DI), CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	VMOVDQA64 Z16, Z0
	MOVQ      R9, SI
	CALL      rest<>(SB)
	VMOVDQA64 Z0, Z16
	MOVQ      SI, R9
	MOVQ      16(DI), CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	VMOVDQA64 Z17, Z0
	MOVQ      R10, SI
	CALL      rest<>(SB)
	VMOVDQA64 Z0, Z17
	MOVQ      SI, R10
	MOVQ      24(DI), CX
	SHRQ      $5, CX
	SUBQ      R13, CX
	VMOVDQA64 Z18, Z0
	MOVQ      R11, SI
	CALL      rest<>(SB)
	VMOVDQA64 Z0, Z18
	MOVQ      SI, R11

	// From here the four keys' finishes run in one register of eight
	// lanes, lane 2k+s for key k's seed s.
	//
	// Lanes vi of both seeds side by side (the pairs permutation), then
	// the four keys' pairs transposed: Z15..Z18 become V1..V4, lane 2k+s
	// holding key k's seed s's vi.
	VPERMQ     Z15, Z14, Z15
	VPERMQ     Z16, Z14, Z16
	VPERMQ     Z17, Z14, Z17
	VPERMQ     Z18, Z14, Z18
	VSHUFI64X2 $0x44, Z16, Z15, Z19
	VSHUFI64X2 $0xEE, Z16, Z15, Z20
	VSHUFI64X2 $0x44, Z18, Z17, Z21
	VSHUFI64X2 $0xEE, Z18, Z17, Z22
	VSHUFI64X2 $0x88, Z21, Z19, Z15
	VSHUFI64X2 $0xDD, Z21, Z19, Z16
	VSHUFI64X2 $0x88, Z22, Z20, Z17
	VSHUFI64X2 $0xDD, Z22, Z20, Z18

	// The rounds of v1..v4 for the merge steps, and h = rotl(v1,1) +
	// rotl(v2,7) + rotl(v3,12) + rotl(v4,18).
	VPBROADCASTQ prime4<>(SB), Z12
	VPMULLQ      Z2, Z15, Z19
	VPMULLQ      Z2, Z16, Z20
	VPMULLQ      Z2, Z17, Z21
	VPMULLQ      Z2, Z18, Z22
	VPROLQ       $31, Z19, Z19
	VPROLQ       $31, Z20, Z20
	VPROLQ       $31, Z21, Z21
	VPROLQ       $31, Z22, Z22
	VPMULLQ      Z1, Z19, Z19
	VPMULLQ      Z1, Z20, Z20
	VPMULLQ      Z1, Z21, Z21
	VPMULLQ      Z1, Z22, Z22
	VPROLQ       $1, Z15, Z15
	VPROLQ       $7, Z16, Z16
	VPROLQ       $12, Z17, Z17
	VPROLQ       $18, Z18, Z18
	VPADDQ       Z16, Z15, Z15
	VPADDQ       Z18, Z17, Z17
	VPADDQ       Z17, Z15, Z4
	VPXORQ       Z19, Z4, Z4
	VPMULLQ      Z1, Z4, Z4
	VPADDQ       Z12, Z4, Z4
	VPXORQ       Z20, Z4, Z4
	VPMULLQ      Z1, Z4, Z4
	VPADDQ       Z12, Z4, Z4
	VPXORQ       Z21, Z4, Z4
	VPMULLQ      Z1, Z4, Z4
	VPADDQ       Z12, Z4, Z4
	VPXORQ       Z22, Z4, Z4
	VPMULLQ      Z1, Z4, Z4
	VPADDQ       Z12, Z4, Z4

	// The lengths, duplicated for both seeds: Z23 = n[k] in lanes 2k,
	// 2k+1. Keys shorter than a stripe start at seed+prime5 instead (K1:
	// their lanes).
	VMOVDQU64        (DI), Y23
	VMOVDQU64        dup<>(SB), Z24
	VPERMQ           Z23, Z24, Z23
	VPBROADCASTQ     thirtytwo<>(SB), Z24
	VPCMPUQ          $1, Z24, Z23, K1
	VBROADCASTI64X2  short<>(SB), Z25
	VMOVDQA64        Z25, K1, Z4
	VPADDQ           Z23, Z4, Z4

	// Each key's tail, the n%32 bytes after its last stripe, loaded with
	// a byte mask (nothing past the key's end is read): Z26 = keys 0 and
	// 1 (32 bytes each), Z27 = keys 2 and 3.
	MOVQ           R8, SI
	MOVQ           0(DI), CX
	CALL           tail<>(SB)
	VMOVDQA64      Y3, Y26
	MOVQ           R9, SI
	MOVQ           8(DI), CX
	CALL           tail<>(SB)
	VINSERTI64X4   $1, Y3, Z26, Z26
	MOVQ           R10, SI
	MOVQ           16(DI), CX
	CALL           tail<>(SB)
	VMOVDQA64      Y3, Y27
	MOVQ           R11, SI
	MOVQ           24(DI), CX
	CALL           tail<>(SB)
	VINSERTI64X4   $1, Y3, Z27, Z27

	// Per lane: r = n%32, the tail's length, its 8-byte words c = r>>3,
	// its 4-byte word d = r>>2&1 and bytes b = r&3.
	VPBROADCASTQ thirtyone<>(SB), Z24
	VPANDQ       Z24, Z23, Z28
	VPSRLQ       $3, Z28, Z29
	VPSRLQ       $2, Z28, Z30
	VPBROADCASTQ one<>(SB), Z24
	VPANDQ       Z24, Z30, Z30
	VPBROADCASTQ three<>(SB), Z24
	VPANDQ       Z24, Z28, Z31

	// The 8-byte words: the ith of lane 2k+s is word i of key k's tail
	// (VPERMT2Q over Z26:Z27 with the index words<>+64*i), for the lanes
	// with more than i of them.
	XORQ CX, CX

eights:
	VPBROADCASTQ   CX, Z24
	VPCMPUQ        $6, Z24, Z29, K2
	KORTESTB       K2, K2
	JZ             fourx
	MOVQ           CX, AX
	SHLQ           $6, AX
	LEAQ           words<>(SB), BX
	VMOVDQU64      (BX)(AX*1), Z10
	VPERMI2Q       Z27, Z26, Z10
	VPMULLQ        Z2, Z10, Z10
	VPROLQ         $31, Z10, Z10
	VPMULLQ        Z1, Z10, Z10
	VPXORQ         Z10, Z4, Z11
	VPROLQ         $27, Z11, Z11
	VPMULLQ        Z1, Z11, Z11
	VPADDQ         Z12, Z11, Z11
	VMOVDQA64      Z11, K2, Z4
	INCQ           CX
	CMPQ           CX, $3
	JB             eights

fourx:
	// The 4-byte word, at word c of the tail, for the lanes that have one.
	VPBROADCASTQ   one<>(SB), Z24
	VPCMPUQ        $0, Z24, Z30, K2
	KORTESTB       K2, K2
	JZ             bytesx
	VMOVDQU64      lanebase<>(SB), Z10
	VPADDQ         Z29, Z10, Z10
	VPERMI2Q       Z27, Z26, Z10
	VPBROADCASTQ   low32<>(SB), Z24
	VPANDQ         Z24, Z10, Z10
	VPMULLQ        Z1, Z10, Z10
	VPXORQ         Z10, Z4, Z11
	VPROLQ         $23, Z11, Z11
	VPMULLQ        Z2, Z11, Z11
	VPBROADCASTQ   prime3<>(SB), Z24
	VPADDQ         Z24, Z11, Z11
	VMOVDQA64      Z11, K2, Z4

bytesx:
	// The bytes, at byte offset o = 8c + 4d + j of the tail: in word o>>3,
	// shifted right by (o&7)*8.
	VPSLLQ       $3, Z29, Z20
	VPSLLQ       $2, Z30, Z21
	VPADDQ       Z21, Z20, Z20
	VPBROADCASTQ prime5<>(SB), Z13
	XORQ         CX, CX

bytesloop:
	VPBROADCASTQ   CX, Z24
	VPCMPUQ        $6, Z24, Z31, K2
	KORTESTB       K2, K2
	JZ             avalanchex
	VPADDQ         Z24, Z20, Z21
	VPSRLQ         $3, Z21, Z10
	VMOVDQU64      lanebase<>(SB), Z22
	VPADDQ         Z22, Z10, Z10
	VPERMI2Q       Z27, Z26, Z10
	VPBROADCASTQ   seven<>(SB), Z22
	VPANDQ         Z22, Z21, Z21
	VPSLLQ         $3, Z21, Z21
	VPSRLVQ        Z21, Z10, Z10
	VPBROADCASTQ   lowbyte<>(SB), Z22
	VPANDQ         Z22, Z10, Z10
	VPMULLQ        Z13, Z10, Z10
	VPXORQ         Z10, Z4, Z11
	VPROLQ         $11, Z11, Z11
	VPMULLQ        Z1, Z11, Z11
	VMOVDQA64      Z11, K2, Z4
	INCQ           CX
	CMPQ           CX, $3
	JB             bytesloop

avalanchex:
	VPBROADCASTQ prime3<>(SB), Z24
	VPSRLQ       $33, Z4, Z10
	VPXORQ       Z10, Z4, Z4
	VPMULLQ      Z2, Z4, Z4
	VPSRLQ       $29, Z4, Z10
	VPXORQ       Z10, Z4, Z4
	VPMULLQ      Z24, Z4, Z4
	VPSRLQ       $32, Z4, Z10
	VPXORQ       Z10, Z4, Z4
	MOVQ         h+16(FP), R12
	VMOVDQU64    Z4, (R12)
	VZEROUPPER
	RET

// tail<> loads a key's tail into Y3, zero after it, reading none of the
// key's bytes past its end. In: SI past the key's last stripe, CX the
// key's length. It uses AX, CX, K3.
TEXT tail<>(SB), NOSPLIT|NOFRAME, $0
	ANDQ      $31, CX
	MOVL      $1, AX
	SHLQ      CX, AX
	DECQ      AX
	KMOVD     AX, K3
	VMOVDQU8.Z (SI), K3, Y3
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
