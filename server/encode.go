package server

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strings"
)

// Output encodings of a vector, named as in the OpenAI encoding_format, the
// Jina embedding_type and the Cohere embedding_types fields.
const (
	encFloat   = "float"
	encBase64  = "base64"
	encBinary  = "binary"
	encUbinary = "ubinary"
	encInt8    = "int8"
	encUint8   = "uint8"
)

// encodings lists every output encoding, in the order error messages name
// them.
var encodings = []string{encFloat, encBase64, encBinary, encUbinary, encInt8, encUint8}

func joinEncodings() string { return strings.Join(encodings, ", ") }

// The integer encodings, and what Cohere documents of them. Cohere's embed
// v2 API reference (docs.cohere.com/reference/embed, and the same text in
// the cohere-ai 8.1.0 client's V2EmbedRequest.embeddingTypes) says only:
// "int8": signed int8 embeddings, "uint8": unsigned int8 embeddings,
// "binary": signed binary embeddings, "ubinary": unsigned binary
// embeddings, "base64": base64 embeddings. Its response schema bounds int8
// to -128..127 and uint8 to 0..255. Cohere's announcement ("Cohere int8 &
// binary Embeddings", March 2024) gives the sizes, 1 byte per dimension
// for int8 and 1 bit per dimension for binary (1024 dimensions -> 128
// bytes), and says its models were trained for them; it publishes no
// formula from float values to int8. So:
//   - binary and ubinary follow those sizes and the signed/unsigned names
//     with the rule of sentence-transformers' quantize_embeddings (the
//     common open implementation of the same scheme: "ubinary" =
//     numpy.packbits(x > 0), "binary" = the same bytes - 128): one bit per
//     dimension, 1 when the value is > 0, 8 dimensions per byte, the first
//     in the most significant bit, the last byte zero-padded; ubinary is
//     the byte 0..255, binary the byte - 128.
//   - int8, for want of a documented rule, is the vector scaled so that its
//     largest magnitude is 127, rounded half away from zero:
//     round(x·127/max|x|), in -127..127 (all zeros for a zero vector), so
//     that cosine similarity survives within the rounding; uint8 is int8 +
//     128, in 1..255, the same relation Cohere documents between binary and
//     ubinary. Integer vectors of different inputs have different scales:
//     compare them by cosine, not by raw dot product.
//
// Each applies to the vector as returned in float: after output_dimension
// (Matryoshka truncation) and normalization.

// encodeVector returns v in the requested encoding as a value for the JSON
// response:
//   - float: the numbers;
//   - base64: standard base64 of the little-endian float32 array;
//   - ubinary: one bit per dimension (1 if > 0), 8 dimensions per byte with
//     the first in the most significant bit, as numbers 0…255; the last byte
//     is zero-padded when the width is not a multiple of 8;
//   - binary: the same bytes minus 128, as numbers −128…127;
//   - int8, uint8: one integer per dimension (see above).
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
	case encInt8:
		return quantizeInt8(v, 0)
	case encUint8:
		return quantizeInt8(v, 128)
	}
	return v
}

// quantizeInt8 returns round(x·127/max|x|) + offset for each value (see
// the integer encodings above).
func quantizeInt8(v []float32, offset int) []int {
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	out := make([]int, len(v))
	if m == 0 {
		for i := range out {
			out[i] = offset
		}
		return out
	}
	for i, x := range v {
		// |x|/m <= 1 in float64, so the rounded value is within -127..127.
		out[i] = int(math.Round(float64(x)*127/m)) + offset
	}
	return out
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
