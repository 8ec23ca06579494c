//go:build !purego

#include "textflag.h"

// func PrefetchLines(addrs *uintptr, n int)
TEXT ·PrefetchLines(SB), NOSPLIT|NOFRAME, $0-16
	MOVQ addrs+0(FP), AX
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JEQ done
loop:
	MOVQ (AX), DX
	PREFETCHT0 (DX)
	ADDQ $8, AX
	DECQ CX
	JNE loop
done:
	RET

// func prefetchKeys(keys [][]byte)
TEXT ·prefetchKeys(SB), NOSPLIT|NOFRAME, $0-24
	MOVQ keys_base+0(FP), AX
	MOVQ keys_len+8(FP), CX
	TESTQ CX, CX
	JEQ keysdone
key:
	MOVQ (AX), DX
	MOVQ 8(AX), BX
	ADDQ DX, BX // the key's end
	ANDQ $-64, DX
	LEAQ 1024(DX), R8
	CMPQ BX, R8
	CMOVQHI R8, BX // at most 16 lines
line:
	CMPQ DX, BX
	JAE next
	PREFETCHT0 (DX)
	ADDQ $64, DX
	JMP line
next:
	ADDQ $24, AX
	DECQ CX
	JNE key
keysdone:
	RET
