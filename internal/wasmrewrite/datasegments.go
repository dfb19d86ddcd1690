package wasmrewrite

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// DataSegment is an active data segment of a module: Data written at
// Offset of memory 0 when the module is instantiated.
type DataSegment struct {
	Offset uint32
	Data   []byte
}

// wasmHeader is the magic number and version 1 that begin a module.
var wasmHeader = []byte{0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00}

const (
	sectionData = 11
	opI32Const  = 0x41
	opEnd       = 0x0b
)

// ErrUnsupportedData is returned for a module whose data segments
// WithoutActiveData cannot lift out (an offset that is not a constant,
// another memory than the first).
var ErrUnsupportedData = errors.New("wasmrewrite: a data segment's offset is not a constant of memory 0")

// WithoutActiveData returns module with the contents of its active data
// segments removed, and those contents: instantiating the result writes
// nothing into the linear memory, which then gets the segments from
// elsewhere (a copy-on-write mapping of an initialised memory). Every
// segment stays, with the same index and kind, so that memory.init and
// data.drop and the data count section keep their meaning; an active
// segment keeps its offset and gets zero bytes. Everything else is copied
// unchanged. A malformed module is an error, as is an active segment whose
// offset is not an i32.const on memory 0.
func WithoutActiveData(module []byte) ([]byte, []DataSegment, error) {
	out := make([]byte, 0, len(module))
	out = append(out, wasmHeader...)
	var segments []DataSegment
	seenData := false
	err := eachSection(module, func(id byte, content []byte) error {
		if id != sectionData {
			out = appendSection(out, id, content)
			return nil
		}
		if seenData {
			return errors.New("more than one data section")
		}
		seenData = true
		stripped, segs, err := stripDataSection(content)
		if err != nil {
			return err
		}
		segments = segs
		out = appendSection(out, id, stripped)
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return out, segments, nil
}

// stripDataSection rewrites the contents of a data section.
func stripDataSection(section []byte) ([]byte, []DataSegment, error) {
	r := wasmReader{b: section}
	count, err := r.u32()
	if err != nil {
		return nil, nil, fmt.Errorf("%w", err)
	}
	out := binary.AppendUvarint(make([]byte, 0, 16+int(min(count, 1<<16))*8), uint64(count))
	var segments []DataSegment
	for i := range count {
		flag, err := r.u32()
		if err != nil {
			return nil, nil, fmt.Errorf("data segment %d: %w", i, err)
		}
		switch flag {
		case 0, 2:
			if flag == 2 {
				mem, err := r.u32()
				if err != nil {
					return nil, nil, fmt.Errorf("data segment %d: %w", i, err)
				}
				if mem != 0 {
					return nil, nil, ErrUnsupportedData
				}
			}
			offset, err := r.constOffset()
			if err != nil {
				return nil, nil, fmt.Errorf("data segment %d: %w", i, err)
			}
			data, err := r.bytes()
			if err != nil {
				return nil, nil, fmt.Errorf("data segment %d: %w", i, err)
			}
			segments = append(segments, DataSegment{Offset: offset, Data: data})
			// Active on memory 0 at offset, with no bytes.
			out = append(out, 0, opI32Const)
			out = appendSLEB128(out, int32(offset))
			out = append(out, opEnd, 0)
		case 1:
			start := r.pos
			if _, err := r.bytes(); err != nil {
				return nil, nil, fmt.Errorf("data segment %d: %w", i, err)
			}
			out = append(out, 1)
			out = append(out, section[start:r.pos]...)
		default:
			return nil, nil, fmt.Errorf("data segment %d has unknown kind %d", i, flag)
		}
	}
	if r.pos != len(section) {
		return nil, nil, errors.New("bytes after the segments")
	}
	return out, segments, nil
}

// appendSLEB128 appends v as a signed LEB128 number.
func appendSLEB128(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// wasmReader reads the binary format's primitives, every read checked
// against the end of b.
type wasmReader struct {
	b   []byte
	pos int
}

var errTruncated = errors.New("truncated")

func (r *wasmReader) byte() (byte, error) {
	if r.pos >= len(r.b) {
		return 0, errTruncated
	}
	c := r.b[r.pos]
	r.pos++
	return c, nil
}

// vector reads a vector: its length, then each element with read. It
// returns the length, and stops at read's first error.
func (r *wasmReader) vector(read func() error) (uint32, error) {
	n, err := r.u32()
	if err != nil {
		return 0, err
	}
	for range n {
		if err := read(); err != nil {
			return n, err
		}
	}
	return n, nil
}

// export reads an entry of the export section: its name, its kind and
// (discarded) the index of what it exports.
func (r *wasmReader) export() (name []byte, kind byte, err error) {
	if name, err = r.bytes(); err != nil {
		return nil, 0, err
	}
	if kind, err = r.byte(); err != nil {
		return nil, 0, err
	}
	_, err = r.u32()
	return name, kind, err
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *wasmReader) u32() (uint32, error) {
	var v uint32
	for shift := uint(0); ; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift == 28 && c > 0x0f {
			return 0, errors.New("LEB128 number exceeds 32 bits")
		}
		v |= uint32(c&0x7f) << shift
		if c < 0x80 {
			return v, nil
		}
	}
}

// i32 reads a signed LEB128 number of at most 32 bits.
func (r *wasmReader) i32() (int32, error) {
	var v int64
	for shift := uint(0); ; shift += 7 {
		c, err := r.byte()
		if err != nil {
			return 0, err
		}
		if shift == 28 {
			// The last byte holds 4 bits and the sign: the unused bits
			// must repeat the sign.
			sign := byte(0)
			if c&0x08 != 0 {
				sign = 0x70
			}
			if c&0x80 != 0 || c&0x70 != sign {
				return 0, errors.New("LEB128 number exceeds 32 bits")
			}
		}
		v |= int64(c&0x7f) << shift
		if c < 0x80 {
			if shift < 57 && c&0x40 != 0 {
				v |= -1 << (shift + 7)
			}
			return int32(v), nil
		}
	}
}

// bytes reads a length-prefixed run of bytes.
func (r *wasmReader) bytes() ([]byte, error) {
	n, err := r.u32()
	if err != nil {
		return nil, err
	}
	if uint64(n) > uint64(len(r.b)-r.pos) {
		return nil, errTruncated
	}
	b := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return b, nil
}

// constOffset reads a data segment's offset: i32.const N, end.
func (r *wasmReader) constOffset() (uint32, error) {
	op, err := r.byte()
	if err != nil {
		return 0, err
	}
	if op != opI32Const {
		return 0, ErrUnsupportedData
	}
	v, err := r.i32()
	if err != nil {
		return 0, err
	}
	if end, err := r.byte(); err != nil || end != opEnd {
		return 0, ErrUnsupportedData
	}
	return uint32(v), nil
}
