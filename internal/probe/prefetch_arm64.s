//go:build !purego

#include "textflag.h"

// func PrefetchLines(addrs *uintptr, n int)
TEXT ·PrefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVD addrs+0(FP), R0
	MOVD n+8(FP), R1
	CBZ R1, done
loop:
	MOVD.P 8(R0), R2
	PRFM (R2), PLDL1KEEP
	SUB $1, R1, R1
	CBNZ R1, loop
done:
	RET

// func prefetchKeys(keys [][]byte)
TEXT ·prefetchKeys(SB), NOSPLIT|NOFRAME, $0-24
	MOVD keys_base+0(FP), R0
	MOVD keys_len+8(FP), R1
	CBZ R1, keysdone
key:
	MOVD (R0), R2
	MOVD 8(R0), R3
	ADD R2, R3, R3 // the key's end
	AND $-64, R2, R2
	ADD $1024, R2, R4
	CMP R4, R3
	CSEL HI, R4, R3, R3 // at most 16 lines
line:
	CMP R3, R2
	BHS next
	PRFM (R2), PLDL1KEEP
	ADD $64, R2, R2
	B line
next:
	ADD $24, R0, R0
	SUB $1, R1, R1
	CBNZ R1, key
keysdone:
	RET
