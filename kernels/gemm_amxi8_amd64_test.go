package kernels

// archAMXI8Cases are the amx GEMMs of this CPU beyond the portable model:
// the tile machine with the assembly's epilogue where the CPU has AVX-512
// VNNI (the avx512-vnni decoders pack, the avx2-int8 assembly is the
// reference), and the assembly where it has AMX.
func archAMXI8Cases() []amxI8Case {
	if !hasAVX512VNNI {
		return nil
	}
	ai8, au8 := archIntKernels()
	ref := int8Ref(ai8["avx2"], au8["avx2"])
	small := func(dst, x []float32, m int, w *Matrix, bias []float32) { gemmVNNI(dst, x, m, w, bias, vnniAVX512) }
	cases := []amxI8Case{{"model-asm-epilogue", &amxI8Tier{kern: kernelAMXI8Model(amxI8EpilogueChecked), quant: quantizeRowU8AVX2, dec: vnniAVX512, small: small}, ref, false}}
	if hasAMX {
		cases = append(cases, amxI8Case{"amx", &amxI8Tier{kern: kernelAMXI8Asm, quant: quantizeRowU8AVX2, dec: vnniAVX512, small: small}, ref, false})
	}
	return cases
}
