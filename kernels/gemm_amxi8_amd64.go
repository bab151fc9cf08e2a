package kernels

import "unsafe"

//go:noescape
func kernelAMXI8(np, ng, nb int, a *int8, as int, ds *float32, dss int, b *byte, rec, pstride, flags int, t *byte, c *float32, ldc int)

//go:noescape
func amxI8Epilogue(nb int, sums *int32, ds *float32, b *byte, rec, flags int, c *float32, ldc int)

// amxAligned returns the 64-byte aligned part of b (amxI8Scratch bytes).
func amxAligned(b []byte) []byte {
	off := int(-uintptr(unsafe.Pointer(&b[0])) & 63)
	return b[off : off+amxI8Scratch-64]
}

// amxI8Checks keeps every access of an amxI8Kernel inside its slices.
func amxI8Checks(np, ng, nb int, a []int8, as int, ds []float32, dss int, b []byte, rec, pstride, flags int, c []float32, ldc int) {
	planes := 1
	if flags&amxFlagTwo != 0 {
		planes = 2
	}
	used := planes*amxTileBytes + 4*vnniNR
	if flags&i8FlagMin != 0 {
		used += 4 * vnniNR
	}
	if rec < used {
		panic("kernels: amx record smaller than its contents")
	}
	_ = a[(ng-1)*as+nb*i8Block*amxRows-1]
	_ = ds[(ng-1)*dss+nb*amxRows*2-1]
	_ = b[(np-1)*pstride+(nb-1)*rec+used-1]
	_ = c[((ng-1)*amxRows+amxRows-1)*ldc+np*vnniNR-1]
}

// kernelAMXI8Asm is the amxI8Kernel of the amx tier.
func kernelAMXI8Asm(np, ng, nb int, a []int8, as int, ds []float32, dss int, b []byte, rec, pstride, flags int, c []float32, ldc int) {
	if np <= 0 || ng <= 0 || nb <= 0 {
		return
	}
	amxI8Checks(np, ng, nb, a, as, ds, dss, b, rec, pstride, flags, c, ldc)
	sp := byteScratch.get(amxI8Scratch)
	defer byteScratch.put(sp)
	t := amxAligned(*sp)
	amxI8Config(t)
	kernelAMXI8(np, ng, nb, &a[0], as, &ds[0], dss, &b[0], rec, pstride, flags, &t[0], &c[0], ldc)
}

// amxI8EpilogueChecked is amxI8Epilogue with the checks that keep it
// inside its slices: sums holds nb blocks of the planes' 16×16 sums.
func amxI8EpilogueChecked(nb int, sums []int32, ds []float32, b []byte, rec, flags int, c []float32, ldc int) {
	planes := 1
	if flags&amxFlagTwo != 0 {
		planes = 2
	}
	_ = sums[nb*planes*amxRows*vnniNR-1]
	_ = ds[nb*amxRows*2-1]
	_ = b[(nb-1)*rec+amxRecord(planes, flags&i8FlagMin != 0)-1]
	_ = c[(amxRows-1)*ldc+vnniNR-1]
	amxI8Epilogue(nb, &sums[0], &ds[0], &b[0], rec, flags, &c[0], ldc)
}
