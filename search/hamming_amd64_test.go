package search

func hasVPOPCNTOrFalse() bool { return hasVPOPCNT }
