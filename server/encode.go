package server

import (
	"encoding/base64"
	"encoding/binary"
	"math"
)

// Output encodings of a vector, named as in the OpenAI encoding_format and
// the Jina embedding_type fields.
const (
	encFloat   = "float"
	encBase64  = "base64"
	encBinary  = "binary"
	encUbinary = "ubinary"
)

// encodeVector returns v in the requested encoding as a value for the JSON
// response:
//   - float: the numbers;
//   - base64: standard base64 of the little-endian float32 array;
//   - ubinary: one bit per dimension (1 if > 0), 8 dimensions per byte with
//     the first in the most significant bit, as numbers 0…255; the last byte
//     is zero-padded when the width is not a multiple of 8;
//   - binary: the same bytes minus 128, as numbers −128…127.
func encodeVector(v []float32, enc string) any {
	switch enc {
	case encBase64:
		return base64.StdEncoding.EncodeToString(float32LE(v))
	case encUbinary:
		packed := packBits(v)
		out := make([]int, len(packed))
		for i, b := range packed {
			out[i] = int(b)
		}
		return out
	case encBinary:
		packed := packBits(v)
		out := make([]int, len(packed))
		for i, b := range packed {
			out[i] = int(b) - 128
		}
		return out
	}
	return v
}

func float32LE(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func packBits(v []float32) []byte {
	out := make([]byte, (len(v)+7)/8)
	for i, x := range v {
		if x > 0 {
			out[i/8] |= 0x80 >> (i % 8)
		}
	}
	return out
}

// finite reports whether every value can be written as a JSON number.
func finite(v []float32) bool {
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return false
		}
	}
	return true
}
