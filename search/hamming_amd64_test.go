package search

// hammingAsm names the assembly Hamming kernel this CPU runs, or is empty.
func hammingAsm() string {
	if hasVPOPCNT {
		return "AVX-512"
	}
	return ""
}
