//go:build !amd64.v3

package kernels

// wantFuseAMD64: below GOAMD64=v3 the compiler rounds every product.
const wantFuseAMD64 = false
