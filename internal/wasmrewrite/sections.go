package wasmrewrite

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// eachSection calls fn with the id and content of each of module's
// sections, in order, and stops at its first error.
func eachSection(module []byte, fn func(id byte, content []byte) error) error {
	if len(module) < len(wasmHeader) || string(module[:len(wasmHeader)]) != string(wasmHeader) {
		return errors.New("wasmrewrite: not a WebAssembly module (version 1)")
	}
	r := wasmReader{b: module, pos: len(wasmHeader)}
	for r.pos < len(r.b) {
		id, err := r.byte()
		if err != nil {
			return fmt.Errorf("wasmrewrite: %w", err)
		}
		content, err := r.bytes()
		if err != nil {
			return fmt.Errorf("wasmrewrite: section %d: %w", id, err)
		}
		if err := fn(id, content); err != nil {
			return fmt.Errorf("wasmrewrite: section %d: %w", id, err)
		}
	}
	return nil
}

// customSection is the content of a custom section of the given name.
func customSection(name string, data []byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(name)))
	out = append(out, name...)
	return append(out, data...)
}

// appendSection appends a section of the given id and content to out.
func appendSection(out []byte, id byte, content []byte) []byte {
	out = append(out, id)
	out = binary.AppendUvarint(out, uint64(len(content)))
	return append(out, content...)
}
