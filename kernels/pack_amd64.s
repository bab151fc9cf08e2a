#include "textflag.h"
#include "pack_amd64.h"

// Panel packing for the float types into the 16-wide panels of the avx2
// tier (k rows 64 bytes apart); the macros are in pack_amd64.h.
// func pack8F32(src *byte, stride int, n8 int, dst *float32)
TEXT ·pack8F32(SB), NOSPLIT, $0-32
	SETUP
loop:
	LOAD8_F32
	TRANSPOSE_STORE(64)
	ADVANCE(32)
	JNZ  loop
done:
	VZEROUPPER
	RET

// func pack8F16(src *byte, stride int, n8 int, dst *float32)
// VCVTPH2PS converts binary16 to float32 exactly, subnormals included.
TEXT ·pack8F16(SB), NOSPLIT, $0-32
	SETUP
loop:
	LOAD8_F16
	TRANSPOSE_STORE(64)
	ADVANCE(16)
	JNZ  loop
done:
	VZEROUPPER
	RET

// func pack8BF16(src *byte, stride int, n8 int, dst *float32)
// A bfloat16 is the top half of a float32: zero-extend and shift.
TEXT ·pack8BF16(SB), NOSPLIT, $0-32
	SETUP
loop:
	LOAD8_BF16
	TRANSPOSE_STORE(64)
	ADVANCE(16)
	JNZ  loop
done:
	VZEROUPPER
	RET
