#include "textflag.h"

// func prefetch(p *byte, n int)
//
// Asks for the cache lines of p[0:n] (n > 0) to be brought into the
// cache: weights are read row by row, one k slice at a time, and the
// hardware prefetcher does not follow the hundred-odd row streams a
// column block interleaves.
TEXT ·prefetch(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	LEAQ (SI)(CX*1), CX

pfloop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JB   pfloop
	RET
