package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"
)

// tileMachine is a Go model of the AMX state the kernels use (palette 1:
// eight tiles of at most 16 rows of 64 bytes) and of the instructions they
// run, after the Intel SDM (vol. 2, AMX): the configuration, loads and
// stores of rows·colsb bytes with a stride, zeroing, and the dot products
// with their shape rules, which the hardware enforces by faulting (#UD)
// and the model by panicking. Memory is read and written through the same
// addresses the assembly uses, so a model kernel written as the assembly's
// instruction sequence checks its layouts and strides.
type tileMachine struct {
	configured bool
	rows       [8]int
	colsb      [8]int
	t          [8][16 * 64]byte
}

// ldtilecfg loads the 64-byte configuration at cfg.
func (m *tileMachine) ldtilecfg(cfg *byte) {
	c := unsafe.Slice(cfg, 64)
	if c[0] != 1 || c[1] != 0 {
		panic(fmt.Sprintf("tile config: palette %d, start row %d", c[0], c[1]))
	}
	for _, b := range c[2:16] {
		if b != 0 {
			panic("tile config: reserved bytes set")
		}
	}
	for t := 0; t < 8; t++ {
		colsb, rows := int(binary.LittleEndian.Uint16(c[16+2*t:])), int(c[48+t])
		if colsb > 64 || rows > 16 || (colsb == 0) != (rows == 0) {
			panic(fmt.Sprintf("tile config: tmm%d %d rows of %d bytes", t, rows, colsb))
		}
		m.rows[t], m.colsb[t] = rows, colsb
	}
	m.configured = true
	m.t = [8][16 * 64]byte{}
}

func (m *tileMachine) check(t int) {
	if !m.configured || t < 0 || t > 7 || m.rows[t] == 0 {
		panic(fmt.Sprintf("tile tmm%d used unconfigured", t))
	}
}

// loadd is TILELOADD tmm(t), [base + row·stride]: rows[t] rows of
// colsb[t] bytes; the rest of the tile is zeroed.
func (m *tileMachine) loadd(t int, base unsafe.Pointer, stride int) {
	m.check(t)
	m.t[t] = [16 * 64]byte{}
	for r := 0; r < m.rows[t]; r++ {
		copy(m.t[t][r*64:r*64+m.colsb[t]], unsafe.Slice((*byte)(unsafe.Add(base, r*stride)), m.colsb[t]))
	}
}

// stored is TILESTORED [base + row·stride], tmm(t).
func (m *tileMachine) stored(t int, base unsafe.Pointer, stride int) {
	m.check(t)
	for r := 0; r < m.rows[t]; r++ {
		copy(unsafe.Slice((*byte)(unsafe.Add(base, r*stride)), m.colsb[t]), m.t[t][r*64:r*64+m.colsb[t]])
	}
}

// zero is TILEZERO tmm(t).
func (m *tileMachine) zero(t int) {
	m.check(t)
	m.t[t] = [16 * 64]byte{}
}

// dotShape checks a dot product's operands: C rows = A rows, C bytes per
// row = B bytes per row, A bytes per row = 4·B rows, three distinct
// tiles.
func (m *tileMachine) dotShape(c, a, b int) {
	m.check(c)
	m.check(a)
	m.check(b)
	if c == a || c == b || a == b {
		panic(fmt.Sprintf("tile dot product tmm%d, tmm%d, tmm%d: registers not distinct", c, a, b))
	}
	if m.rows[c] != m.rows[a] || m.colsb[c] != m.colsb[b] || m.colsb[a] != 4*m.rows[b] {
		panic(fmt.Sprintf("tile dot product tmm%d (%d×%d), tmm%d (%d×%d), tmm%d (%d×%d): shapes do not fit",
			c, m.rows[c], m.colsb[c], a, m.rows[a], m.colsb[a], b, m.rows[b], m.colsb[b]))
	}
}

// dpb is the int8 dot product: c[i][j] += Σ_k a[i][4k+l]·b[k][4j+l],
// each operand signed or not (TDPBSSD both signed, TDPBUSD a unsigned).
func (m *tileMachine) dpb(c, a, b int, aSigned, bSigned bool) {
	m.dotShape(c, a, b)
	val := func(x byte, signed bool) int32 {
		if signed {
			return int32(int8(x))
		}
		return int32(x)
	}
	for i := 0; i < m.rows[c]; i++ {
		for j := 0; j < m.colsb[c]/4; j++ {
			o := i*64 + 4*j
			s := int32(binary.LittleEndian.Uint32(m.t[c][o:]))
			for k := 0; k < m.rows[b]; k++ {
				for l := 0; l < 4; l++ {
					s += val(m.t[a][i*64+4*k+l], aSigned) * val(m.t[b][k*64+4*j+l], bSigned)
				}
			}
			binary.LittleEndian.PutUint32(m.t[c][o:], uint32(s))
		}
	}
}

// dpbssd is TDPBSSD tmm(c), tmm(a), tmm(b).
func (m *tileMachine) dpbssd(c, a, b int) { m.dpb(c, a, b, true, true) }

// dpbf16ps is TDPBF16PS: c[i][j] += a[i][2k+1]·b[k][2j+1] + a[i][2k]·b[k][2j]
// over k in float32, each pair's products added high first (as the SDM
// writes the operation and VDPBF16PS's model does).
func (m *tileMachine) dpbf16ps(c, a, b int) {
	m.dotShape(c, a, b)
	h := func(t []byte, o int) float32 { return bf16Value(uint32(binary.LittleEndian.Uint16(t[o:]))) }
	for i := 0; i < m.rows[c]; i++ {
		for j := 0; j < m.colsb[c]/4; j++ {
			o := i*64 + 4*j
			s := math.Float32frombits(binary.LittleEndian.Uint32(m.t[c][o:]))
			for k := 0; k < m.rows[b]; k++ {
				s += h(m.t[a][:], i*64+4*k+2) * h(m.t[b][:], k*64+4*j+2)
				s += h(m.t[a][:], i*64+4*k) * h(m.t[b][:], k*64+4*j)
			}
			binary.LittleEndian.PutUint32(m.t[c][o:], math.Float32bits(s))
		}
	}
}

// kernelAMXI8Model is kernelAMXI8 with its tile instructions run by the
// tile machine, in the assembly's order and with its addresses, and the
// epilogue and output by epi (the assembly's own, amxI8Epilogue, where
// the CPU has AVX-512, or a Go transcription): the sums of each block go
// to a buffer of per-block sums instead of the two the assembly
// alternates, which does not change what the epilogue reads.
func kernelAMXI8Model(epi func(nb int, sums []int32, ds []float32, b []byte, rec, flags int, c []float32, ldc int)) amxI8Kernel {
	return func(np, ng, nb int, a []int8, as int, ds []float32, dss int, b []byte, rec, pstride, flags int, c []float32, ldc int) {
		if np <= 0 || ng <= 0 || nb <= 0 {
			return
		}
		cfg := make([]byte, 64)
		amxI8Config(cfg)
		var m tileMachine
		m.ldtilecfg(&cfg[0])
		two := flags&amxFlagTwo != 0
		planes := 1
		if two {
			planes = 2
		}
		sums := make([]int32, nb*planes*256)
		for j := 0; j < np; j++ {
			bp := b[j*pstride:]
			for g := 0; g < ng; g++ {
				ag := a[g*as:]
				for blk := 0; blk < nb; blk++ {
					par := blk % 2
					ax := unsafe.Pointer(&ag[blk*512])
					bx := unsafe.Pointer(&bp[blk*rec])
					out := unsafe.Pointer(&sums[blk*planes*256])
					if two {
						m.loadd(4+par, ax, 32)
						m.loadd(6, bx, 64)
						m.loadd(7, unsafe.Add(bx, 512), 64)
						m.zero(par)
						m.zero(2 + par)
						m.dpbssd(par, 4+par, 6)
						m.dpbssd(2+par, 4+par, 7)
						m.stored(par, out, 64)
						m.stored(2+par, unsafe.Add(out, 1024), 64)
						continue
					}
					m.loadd(4+par, ax, 32)
					m.loadd(6+par, bx, 64)
					m.zero(par)
					m.dpbssd(par, 4+par, 6+par)
					m.stored(par, out, 64)
				}
				epi(nb, sums, ds[g*dss:], bp, rec, flags, c[g*amxRows*ldc+j*vnniNR:], ldc)
			}
		}
	}
}

// amxI8EpilogueGo is a Go transcription of the kernel's epilogue and
// output for one group and panel (fma32 rounds twice, so it may differ
// from the assembly's in the last bit on rare ties: it is compared with
// the portable paths, which round the same way).
func amxI8EpilogueGo(nb int, sums []int32, ds []float32, b []byte, rec, flags int, c []float32, ldc int) {
	planes := 1
	if flags&amxFlagTwo != 0 {
		planes = 2
	}
	var acc [amxRows][vnniNR]float32
	for blk := 0; blk < nb; blk++ {
		s := sums[blk*planes*256:]
		r := b[blk*rec:]
		f := r[planes*amxTileBytes:]
		for row := 0; row < amxRows; row++ {
			dx, dxs := ds[(blk*amxRows+row)*2], ds[(blk*amxRows+row)*2+1]
			for col := 0; col < vnniNR; col++ {
				v := s[row*vnniNR+col]
				if planes == 2 {
					v = v<<6 + s[256+row*vnniNR+col]
				}
				fd := math.Float32frombits(binary.LittleEndian.Uint32(f[4*col:]))
				a := fma32(float32(v), dx*fd, acc[row][col])
				if flags&i8FlagMin != 0 {
					fm := math.Float32frombits(binary.LittleEndian.Uint32(f[4*vnniNR+4*col:]))
					a = fma32(fm, dxs, a)
				}
				acc[row][col] = a
			}
		}
	}
	for row := 0; row < amxRows; row++ {
		cr := c[row*ldc : row*ldc+vnniNR]
		for col, v := range acc[row] {
			if flags&i8FlagAcc != 0 {
				v += cr[col]
			}
			cr[col] = v
		}
	}
}
