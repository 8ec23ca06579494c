//go:build !purego

#include "textflag.h"

// func Lines(addrs *uintptr, n int)
TEXT ·Lines(SB), NOSPLIT|NOFRAME, $0-16
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
