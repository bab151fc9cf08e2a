package index

import (
	"encoding/base64"
	"encoding/binary"
)

// The dataset's Parquet files carry, as pyarrow's and arrow-rs's writers
// do, their Arrow schema under the key "ARROW:schema" (an Arrow IPC schema
// message, base64). Parquet has no fixed-size list, so without it a reader
// sees the vectors as list<float>; with it pyarrow, pandas and arrow-rs
// read them as fixed_size_list<float>[N], the type LanceDB needs to find a
// vector column (and list<fixed_size_list<float>[D]> its multi-vector
// search). Readers that do not know the key (DuckDB) read the same
// columns as lists.

// arrowSchemaKey is the Parquet key-value metadata key of the Arrow schema.
const arrowSchemaKey = "ARROW:schema"

// vectorWidths gives the fixed widths of a part's vector columns: emb is
// the width of every row's embedding and mv of every row's multi-vector
// rows, or 0 where the rows do not share one (a column whose rows are
// empty, as embedding in a multi-vector dataset, stays a plain list).
func vectorWidths(rows []Row) (emb, mv int) {
	emb, mv = -1, -1
	for i := range rows {
		r := &rows[i]
		if emb != 0 {
			if n := len(r.Embedding); emb == -1 && n > 0 {
				emb = n
			} else if n != emb {
				emb = 0
			}
		}
		for _, v := range r.Vectors {
			if mv == 0 {
				break
			}
			if n := len(v); mv == -1 && n > 0 {
				mv = n
			} else if n != mv {
				mv = 0
			}
		}
	}
	return max(emb, 0), max(mv, 0)
}

// arrowSchemaValue is the base64 Arrow IPC schema message of pqRow's
// columns, the embedding fixed_size_list<float>[emb] when emb > 0 and the
// multi-vector rows fixed_size_list<float>[mv] when mv > 0. Every column
// is non-nullable and the lists' items are named "element", as the
// Parquet schema parquet-go writes for pqRow.
func arrowSchemaValue(emb, mv int) string {
	vec := func(name string, width int) arrowField {
		item := arrowField{name: "element", typ: arrowFloat32}
		if width > 0 {
			return arrowField{name: name, typ: arrowFixedSizeList, size: width, children: []arrowField{item}}
		}
		return arrowField{name: name, typ: arrowList, children: []arrowField{item}}
	}
	fields := []arrowField{
		{name: "id", typ: arrowUtf8},
		{name: "path", typ: arrowUtf8},
		{name: "page", typ: arrowInt32},
		{name: "sha256", typ: arrowUtf8},
		{name: "model", typ: arrowUtf8},
		{name: "width", typ: arrowInt32},
		{name: "height", typ: arrowInt32},
		{name: "text", typ: arrowUtf8},
		vec("embedding", emb),
		{name: "multivector", typ: arrowList, children: []arrowField{vec("element", mv)}},
	}
	msg := encodeSchemaMessage(fields)
	// The encapsulated IPC form: continuation marker, metadata length
	// (the message padded to 8 bytes), the message.
	pad := (8 - len(msg)%8) % 8
	out := make([]byte, 8, 8+len(msg)+pad)
	binary.LittleEndian.PutUint32(out[0:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(out[4:], uint32(len(msg)+pad))
	out = append(out, msg...)
	out = append(out, make([]byte, pad)...)
	return base64.StdEncoding.EncodeToString(out)
}

// arrowType is the subset of the Arrow schema's Type union this package
// writes; the values are the union's tags in Schema.fbs.
type arrowType uint8

const (
	arrowInt32         arrowType = 2  // Int {bitWidth: 32, is_signed: true}
	arrowFloat32       arrowType = 3  // FloatingPoint {precision: SINGLE}
	arrowUtf8          arrowType = 5  // Utf8 {}
	arrowList          arrowType = 12 // List {}
	arrowFixedSizeList arrowType = 16 // FixedSizeList {listSize}
)

// arrowField is a non-nullable field of the schema.
type arrowField struct {
	name     string
	typ      arrowType
	size     int // listSize of a fixed-size list
	children []arrowField
}

// encodeSchemaMessage writes the FlatBuffers Message {version: V5,
// header: Schema {fields}} (Message.fbs, Schema.fbs).
//
// The buffer is laid out front to back: a table's vtable just before it
// (the table's first word is the distance back to it), then the table,
// then what its offset fields point to, so that every offset points
// forward as FlatBuffers requires; scalars sit at multiples of their size
// from the start, which verifiers check.
func encodeSchemaMessage(fields []arrowField) []byte {
	var b fbBuilder
	root := b.reserveOffset()
	b.patch(root, b.table(
		fbScalar16(4), // version: MetadataVersion.V5
		fbScalar8(1),  // header_type: MessageHeader.Schema
		fbRef(func() int { // header
			return b.table(
				fbAbsent(), // endianness: Little (the default)
				fbRef(func() int { return b.fieldVector(fields) }),
			)
		}),
	))
	return b.buf
}

// fbBuilder appends a FlatBuffers buffer front to back.
type fbBuilder struct{ buf []byte }

// fbSlot is one field of a table: absent, an inline scalar, or an offset
// to an object written after the table.
type fbSlot struct {
	size   int // 0: absent; 1, 2, 4: an inline scalar; -1: an offset
	value  uint32
	object func() int // writes the referenced object, returning its position
}

func fbAbsent() fbSlot                   { return fbSlot{} }
func fbScalar8(v uint8) fbSlot           { return fbSlot{size: 1, value: uint32(v)} }
func fbScalar16(v uint16) fbSlot         { return fbSlot{size: 2, value: uint32(v)} }
func fbScalar32(v uint32) fbSlot         { return fbSlot{size: 4, value: v} }
func fbRef(object func() int) fbSlot     { return fbSlot{size: -1, object: object} }
func (b *fbBuilder) align(n int)         { b.buf = append(b.buf, make([]byte, (n-len(b.buf)%n)%n)...) }
func (b *fbBuilder) put16(at int, v int) { binary.LittleEndian.PutUint16(b.buf[at:], uint16(v)) }
func (b *fbBuilder) put32(at int, v int) { binary.LittleEndian.PutUint32(b.buf[at:], uint32(v)) }

// reserveOffset appends a 4-byte offset field to fill in by patch.
func (b *fbBuilder) reserveOffset() int {
	b.align(4)
	at := len(b.buf)
	b.buf = append(b.buf, 0, 0, 0, 0)
	return at
}

// patch points the offset at position at to the object at target.
func (b *fbBuilder) patch(at, target int) { b.put32(at, target-at) }

// table writes a vtable and its table with the slots in field order, then
// the objects the slots refer to, and returns the table's position.
func (b *fbBuilder) table(slots ...fbSlot) int {
	// The table's layout: its soffset, then the present fields, each at
	// a multiple of its size (offsets first, all 4 bytes, then the
	// smaller scalars by decreasing size, so no padding is needed
	// between them).
	at := make([]int, len(slots))
	size := 4
	for _, want := range []int{-1, 4, 2, 1} {
		width := want
		if want < 0 {
			width = 4
		}
		for i, s := range slots {
			if s.size == want {
				at[i] = size
				size += width
			}
		}
	}
	// The vtable: its size, the table's size, each field's place in the
	// table (0: absent). It ends 4-aligned where the table starts.
	vsize := 4 + 2*len(slots)
	b.align(2)
	if (len(b.buf)+vsize)%4 != 0 {
		b.buf = append(b.buf, 0, 0)
	}
	vt := len(b.buf)
	b.buf = append(b.buf, make([]byte, vsize)...)
	b.put16(vt, vsize)
	b.put16(vt+2, size)
	for i := range slots {
		b.put16(vt+4+2*i, at[i])
	}
	t := len(b.buf)
	b.buf = append(b.buf, make([]byte, size)...)
	b.put32(t, t-vt)
	for i, s := range slots {
		switch s.size {
		case 1:
			b.buf[t+at[i]] = uint8(s.value)
		case 2:
			b.put16(t+at[i], int(s.value))
		case 4:
			b.put32(t+at[i], int(s.value))
		}
	}
	for i, s := range slots {
		if s.size < 0 {
			b.patch(t+at[i], s.object())
		}
	}
	return t
}

// offsetVector writes a vector of n offsets and then the n objects, and
// returns the vector's position.
func (b *fbBuilder) offsetVector(n int, object func(i int) int) int {
	b.align(4)
	v := len(b.buf)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(n))
	b.buf = append(b.buf, make([]byte, 4*n)...)
	for i := range n {
		b.patch(v+4+4*i, object(i))
	}
	return v
}

// str writes a string (length, bytes, a terminating zero).
func (b *fbBuilder) str(s string) int {
	b.align(4)
	at := len(b.buf)
	b.buf = binary.LittleEndian.AppendUint32(b.buf, uint32(len(s)))
	b.buf = append(b.buf, s...)
	b.buf = append(b.buf, 0)
	return at
}

func (b *fbBuilder) fieldVector(fields []arrowField) int {
	return b.offsetVector(len(fields), func(i int) int { return b.field(fields[i]) })
}

// field writes Field {name, nullable: false, type, children}.
func (b *fbBuilder) field(f arrowField) int {
	typ := func() int {
		switch f.typ {
		case arrowInt32:
			return b.table(fbScalar32(32), fbScalar8(1)) // bitWidth, is_signed
		case arrowFloat32:
			return b.table(fbScalar16(1)) // precision: SINGLE
		case arrowFixedSizeList:
			return b.table(fbScalar32(uint32(f.size))) // listSize
		default: // Utf8, List: no fields
			return b.table()
		}
	}
	children := fbAbsent()
	if len(f.children) > 0 {
		children = fbRef(func() int { return b.fieldVector(f.children) })
	}
	return b.table(
		fbRef(func() int { return b.str(f.name) }),
		fbScalar8(0), // nullable: false
		fbScalar8(uint8(f.typ)),
		fbRef(typ),
		fbAbsent(), // dictionary
		children,
	)
}
