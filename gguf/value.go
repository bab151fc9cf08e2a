package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
)

// ValueType is the type id of a metadata value as stored in a GGUF file.
type ValueType uint32

// The metadata value types. Ids are fixed by the file format.
const (
	ValueUint8   ValueType = 0
	ValueInt8    ValueType = 1
	ValueUint16  ValueType = 2
	ValueInt16   ValueType = 3
	ValueUint32  ValueType = 4
	ValueInt32   ValueType = 5
	ValueFloat32 ValueType = 6
	ValueBool    ValueType = 7
	ValueString  ValueType = 8
	ValueArray   ValueType = 9
	ValueUint64  ValueType = 10
	ValueInt64   ValueType = 11
	ValueFloat64 ValueType = 12
)

var valueTypeNames = [...]string{
	"UINT8", "INT8", "UINT16", "INT16", "UINT32", "INT32", "FLOAT32",
	"BOOL", "STRING", "ARRAY", "UINT64", "INT64", "FLOAT64",
}

// String returns the name the GGUF specification uses, e.g. "UINT32".
func (t ValueType) String() string {
	if int(t) < len(valueTypeNames) {
		return valueTypeNames[t]
	}
	return fmt.Sprintf("valuetype(%d)", uint32(t))
}

func (t ValueType) valid() bool { return t <= ValueFloat64 }

// size is the encoded size of a fixed-size value type, 0 for strings and
// arrays.
func (t ValueType) size() int {
	switch t {
	case ValueUint8, ValueInt8, ValueBool:
		return 1
	case ValueUint16, ValueInt16:
		return 2
	case ValueUint32, ValueInt32, ValueFloat32:
		return 4
	case ValueUint64, ValueInt64, ValueFloat64:
		return 8
	}
	return 0
}

func (t ValueType) isInt() bool {
	switch t {
	case ValueUint8, ValueInt8, ValueUint16, ValueInt16, ValueUint32, ValueInt32, ValueUint64, ValueInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == ValueInt8 || t == ValueInt16 || t == ValueInt32 || t == ValueInt64
}

func (t ValueType) isFloat() bool { return t == ValueFloat32 || t == ValueFloat64 }

// Value is one metadata value of any GGUF type, arrays (also nested) included.
// The zero Value is invalid; values come from a parsed File or from ValueOf.
type Value struct {
	typ  ValueType
	elem ValueType // element type of an array

	// Scalars: integers and bools as their 64-bit two's-complement bits
	// (signed types sign-extended), floats as float64 bits (a FLOAT32 widens
	// exactly, so it is written back unchanged).
	bits uint64
	str  string

	// Arrays: numeric and bool elements packed as in the file (so an array
	// takes no more memory than its encoding), strings in strs, nested arrays
	// in arrs; only the one matching elem is set.
	raw  []byte
	strs []string
	arrs []Value
}

// Type is the GGUF type of v.
func (v Value) Type() ValueType { return v.typ }

// ElemType is the element type of an array value.
func (v Value) ElemType() ValueType { return v.elem }

// Len is the number of elements of an array value, 0 for scalars.
func (v Value) Len() int {
	if v.typ != ValueArray {
		return 0
	}
	switch {
	case v.elem == ValueString:
		return len(v.strs)
	case v.elem == ValueArray:
		return len(v.arrs)
	}
	return len(v.raw) / v.elem.size()
}

// num returns numeric element i in the 64-bit form of Value.bits. Bools were
// validated when the array was built.
func (v Value) num(i int) uint64 {
	sz := v.elem.size()
	b, _ := decodeScalar(v.elem, v.raw[i*sz:(i+1)*sz])
	return b
}

// Index returns element i of an array value as a scalar (or array) Value.
func (v Value) Index(i int) Value {
	switch {
	case v.elem == ValueString:
		return Value{typ: ValueString, str: v.strs[i]}
	case v.elem == ValueArray:
		return v.arrs[i]
	}
	return Value{typ: v.elem, bits: v.num(i)}
}

func (v Value) typeName() string {
	if v.typ == ValueArray {
		return "ARRAY of " + v.elem.String()
	}
	return v.typ.String()
}

func (v Value) mismatch(want string) error {
	return fmt.Errorf("is %s, want %s", v.typeName(), want)
}

// AsString returns a STRING value.
func (v Value) AsString() (string, error) {
	if v.typ != ValueString {
		return "", v.mismatch("STRING")
	}
	return v.str, nil
}

// AsBool returns a BOOL value.
func (v Value) AsBool() (bool, error) {
	if v.typ != ValueBool {
		return false, v.mismatch("BOOL")
	}
	return v.bits != 0, nil
}

func intAsUint(t ValueType, bits uint64) (uint64, error) {
	if t.isSigned() && int64(bits) < 0 {
		return 0, fmt.Errorf("is negative (%d), want an unsigned value", int64(bits))
	}
	return bits, nil
}

func intAsInt(t ValueType, bits uint64) (int64, error) {
	if !t.isSigned() && bits > math.MaxInt64 {
		return 0, fmt.Errorf("value %d overflows int64", bits)
	}
	return int64(bits), nil
}

func numAsFloat(t ValueType, bits uint64) float64 {
	switch {
	case t.isFloat():
		return math.Float64frombits(bits)
	case t.isSigned():
		return float64(int64(bits))
	}
	return float64(bits)
}

// AsUint returns an integer value of any width as uint64; negative values
// are an error.
func (v Value) AsUint() (uint64, error) {
	if !v.typ.isInt() {
		return 0, v.mismatch("an integer")
	}
	return intAsUint(v.typ, v.bits)
}

// AsInt returns an integer value of any width as int64.
func (v Value) AsInt() (int64, error) {
	if !v.typ.isInt() {
		return 0, v.mismatch("an integer")
	}
	return intAsInt(v.typ, v.bits)
}

// AsFloat returns a FLOAT32, FLOAT64 or integer value as float64.
func (v Value) AsFloat() (float64, error) {
	if !v.typ.isFloat() && !v.typ.isInt() {
		return 0, v.mismatch("a number")
	}
	return numAsFloat(v.typ, v.bits), nil
}

// AsStrings returns a copy of an array of strings.
func (v Value) AsStrings() ([]string, error) {
	if v.typ != ValueArray || v.elem != ValueString {
		return nil, v.mismatch("ARRAY of STRING")
	}
	return append([]string(nil), v.strs...), nil
}

// AsInts returns an array of integers of any width widened to int64.
func (v Value) AsInts() ([]int64, error) {
	if v.typ != ValueArray || !v.elem.isInt() {
		return nil, v.mismatch("ARRAY of integers")
	}
	out := make([]int64, v.Len())
	for i := range out {
		x, err := intAsInt(v.elem, v.num(i))
		if err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
		out[i] = x
	}
	return out, nil
}

// AsFloats returns an array of floats (or integers) as float64.
func (v Value) AsFloats() ([]float64, error) {
	if v.typ != ValueArray || !(v.elem.isFloat() || v.elem.isInt()) {
		return nil, v.mismatch("ARRAY of numbers")
	}
	out := make([]float64, v.Len())
	for i := range out {
		out[i] = numAsFloat(v.elem, v.num(i))
	}
	return out, nil
}

// AsBools returns an array of bools.
func (v Value) AsBools() ([]bool, error) {
	if v.typ != ValueArray || v.elem != ValueBool {
		return nil, v.mismatch("ARRAY of BOOL")
	}
	out := make([]bool, v.Len())
	for i := range out {
		out[i] = v.num(i) != 0
	}
	return out, nil
}

// Interface returns v as the Go value of its exact GGUF type: uint32 for
// UINT32, []int32 for an INT32 array, []any for an array of arrays, and so on.
// ValueOf(v.Interface()) reproduces v.
func (v Value) Interface() any {
	if v.typ == ValueArray {
		switch v.elem {
		case ValueString:
			return append([]string(nil), v.strs...)
		case ValueArray:
			out := make([]any, len(v.arrs))
			for i, a := range v.arrs {
				out[i] = a.Interface()
			}
			return out
		}
		rt := reflect.SliceOf(reflect.TypeOf(scalarInterface(v.elem, 0)))
		out := reflect.MakeSlice(rt, v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(reflect.ValueOf(scalarInterface(v.elem, v.num(i))))
		}
		return out.Interface()
	}
	if v.typ == ValueString {
		return v.str
	}
	return scalarInterface(v.typ, v.bits)
}

func scalarInterface(t ValueType, bits uint64) any {
	switch t {
	case ValueUint8:
		return uint8(bits)
	case ValueInt8:
		return int8(bits)
	case ValueUint16:
		return uint16(bits)
	case ValueInt16:
		return int16(bits)
	case ValueUint32:
		return uint32(bits)
	case ValueInt32:
		return int32(bits)
	case ValueUint64:
		return bits
	case ValueInt64:
		return int64(bits)
	case ValueFloat32:
		return float32(math.Float64frombits(bits))
	case ValueFloat64:
		return math.Float64frombits(bits)
	case ValueBool:
		return bits != 0
	}
	return nil
}

// String formats v for display; arrays longer than 8 elements are shortened.
func (v Value) String() string {
	switch v.typ {
	case ValueString:
		return strconv.Quote(v.str)
	case ValueArray:
		var b strings.Builder
		n := v.Len()
		b.WriteByte('[')
		for i := 0; i < n && i < 8; i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(v.Index(i).String())
		}
		if n > 8 {
			fmt.Fprintf(&b, ", ... (%d elements)", n)
		}
		b.WriteByte(']')
		return b.String()
	case ValueFloat32:
		return strconv.FormatFloat(math.Float64frombits(v.bits), 'g', -1, 32)
	}
	return fmt.Sprint(v.Interface())
}

// ValueOf converts a Go value to a metadata Value. The Go type picks the
// GGUF type: string, bool, int8..int64, uint8..uint64, float32, float64 map
// to the type of the same name (int and uint to INT64 and UINT64); slices of
// these become arrays, slices of slices nested arrays. A Value is returned
// unchanged.
func ValueOf(x any) (Value, error) {
	if v, ok := x.(Value); ok {
		if !v.typ.valid() {
			return Value{}, fmt.Errorf("invalid Value")
		}
		return v, nil
	}
	if x == nil {
		return Value{}, fmt.Errorf("unsupported Go type <nil>")
	}
	return valueOfReflect(reflect.ValueOf(x), 0)
}

// maxDepth bounds array nesting, both when reading (recursion on untrusted
// input) and when writing.
const maxDepth = 8

func kindType(k reflect.Kind) (ValueType, bool) {
	switch k {
	case reflect.Uint8:
		return ValueUint8, true
	case reflect.Int8:
		return ValueInt8, true
	case reflect.Uint16:
		return ValueUint16, true
	case reflect.Int16:
		return ValueInt16, true
	case reflect.Uint32:
		return ValueUint32, true
	case reflect.Int32:
		return ValueInt32, true
	case reflect.Uint64, reflect.Uint:
		return ValueUint64, true
	case reflect.Int64, reflect.Int:
		return ValueInt64, true
	case reflect.Float32:
		return ValueFloat32, true
	case reflect.Float64:
		return ValueFloat64, true
	case reflect.Bool:
		return ValueBool, true
	case reflect.String:
		return ValueString, true
	case reflect.Slice, reflect.Array:
		return ValueArray, true
	}
	return 0, false
}

func scalarBits(rv reflect.Value) uint64 {
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return uint64(rv.Int())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return rv.Uint()
	case reflect.Float32, reflect.Float64:
		return math.Float64bits(rv.Float())
	case reflect.Bool:
		if rv.Bool() {
			return 1
		}
	}
	return 0
}

func valueOfReflect(rv reflect.Value, depth int) (Value, error) {
	if rv.Kind() == reflect.Interface && !rv.IsNil() {
		rv = rv.Elem()
	}
	if v, ok := rv.Interface().(Value); ok {
		return ValueOf(v)
	}
	t, ok := kindType(rv.Kind())
	if !ok {
		return Value{}, fmt.Errorf("unsupported Go type %s", rv.Type())
	}
	switch t {
	case ValueString:
		return Value{typ: ValueString, str: rv.String()}, nil
	case ValueArray:
	default:
		return Value{typ: t, bits: scalarBits(rv)}, nil
	}
	if depth >= maxDepth {
		return Value{}, fmt.Errorf("arrays nested deeper than %d", maxDepth)
	}
	n := rv.Len()
	ek := rv.Type().Elem().Kind()
	elem, ok := kindType(ek)
	if ek == reflect.Interface {
		// []any holds arrays (the form Interface returns for nested arrays).
		elem, ok = ValueArray, true
	}
	if !ok {
		return Value{}, fmt.Errorf("unsupported Go type %s", rv.Type())
	}
	v := Value{typ: ValueArray, elem: elem}
	switch elem {
	case ValueString:
		v.strs = make([]string, n)
		for i := range n {
			v.strs[i] = rv.Index(i).String()
		}
	case ValueArray:
		v.arrs = make([]Value, n)
		for i := range n {
			a, err := valueOfReflect(rv.Index(i), depth+1)
			if err != nil {
				return Value{}, fmt.Errorf("element %d: %w", i, err)
			}
			if a.typ != ValueArray {
				return Value{}, fmt.Errorf("element %d: is %s, want ARRAY", i, a.typ)
			}
			v.arrs[i] = a
		}
	default:
		v.raw = make([]byte, 0, n*elem.size())
		for i := range n {
			v.raw = appendScalar(v.raw, elem, scalarBits(rv.Index(i)))
		}
	}
	return v, nil
}

// ErrKeyNotFound is wrapped by the typed getters when a key is absent, so
// callers can treat optional keys with errors.Is.
var ErrKeyNotFound = errors.New("key not found")

func getAs[T any](f *File, key string, as func(Value) (T, error)) (T, error) {
	var zero T
	v, ok := f.Lookup(key)
	if !ok {
		return zero, fmt.Errorf("gguf: metadata %q: %w", key, ErrKeyNotFound)
	}
	x, err := as(v)
	if err != nil {
		return zero, fmt.Errorf("gguf: metadata %q: %w", key, err)
	}
	return x, nil
}

// String returns the STRING value of key.
func (f *File) String(key string) (string, error) { return getAs(f, key, Value.AsString) }

// Uint returns an integer value of key of any width; negative is an error.
func (f *File) Uint(key string) (uint64, error) { return getAs(f, key, Value.AsUint) }

// Int returns an integer value of key of any width.
func (f *File) Int(key string) (int64, error) { return getAs(f, key, Value.AsInt) }

// Float returns a FLOAT32, FLOAT64 or integer value of key.
func (f *File) Float(key string) (float64, error) { return getAs(f, key, Value.AsFloat) }

// Bool returns the BOOL value of key.
func (f *File) Bool(key string) (bool, error) { return getAs(f, key, Value.AsBool) }

// Strings returns a copy of the string array of key.
func (f *File) Strings(key string) ([]string, error) { return getAs(f, key, Value.AsStrings) }

// Ints returns the integer array of key, any width, widened.
func (f *File) Ints(key string) ([]int64, error) { return getAs(f, key, Value.AsInts) }

// Floats returns the float (or integer) array of key.
func (f *File) Floats(key string) ([]float64, error) { return getAs(f, key, Value.AsFloats) }

// appendScalar appends the little-endian encoding of a fixed-size value
// given in the 64-bit form of Value.bits.
func appendScalar(dst []byte, t ValueType, bits uint64) []byte {
	switch t.size() {
	case 1:
		return append(dst, byte(bits))
	case 2:
		return binary.LittleEndian.AppendUint16(dst, uint16(bits))
	case 4:
		if t == ValueFloat32 {
			bits = uint64(math.Float32bits(float32(math.Float64frombits(bits))))
		}
		return binary.LittleEndian.AppendUint32(dst, uint32(bits))
	}
	return binary.LittleEndian.AppendUint64(dst, bits)
}
