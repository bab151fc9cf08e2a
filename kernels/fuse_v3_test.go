//go:build amd64.v3

package kernels

// wantFuseAMD64: GOAMD64=v3 and up let the compiler fuse a·b + c.
const wantFuseAMD64 = true
