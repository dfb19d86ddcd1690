package wasmrewrite

import (
	"fmt"
)

// eagerElementsSection names the custom section in which LazyTable keeps
// the module's original element section.
const eagerElementsSection = "wasmrewrite.elements"

// HasTableExports reports whether module exports two functions named as
// exports says: whether LazyTable has rewritten it. A malformed module
// is an error.
func HasTableExports(module []byte, exports TableExports) (bool, error) {
	found := 0
	err := eachSection(module, func(id byte, content []byte) error {
		if id != sectionExport {
			return nil
		}
		r := wasmReader{b: content}
		_, err := r.vector(func() error {
			name, kind, err := r.export()
			if err == nil && kind == 0 && (string(name) == exports.Fill || string(name) == exports.Used) {
				found++
			}
			return err
		})
		return err
	})
	return found == 2 && exports.Fill != exports.Used, err
}

// EagerTable returns a module LazyTable rewrote with its original element
// section back in place of the declarative one: wazero fills the whole
// table at instantiation again, as the module before the rewrite asked,
// and the guards before call_indirect find every entry filled. It is for
// measuring what the lazy table saves. A module without the custom section
// LazyTable adds is an error.
func EagerTable(module []byte) ([]byte, error) {
	var elements []byte
	kept, elementSections := 0, 0
	err := eachSection(module, func(id byte, content []byte) error {
		switch id {
		case sectionElement:
			elementSections++
		case sectionCustom:
			r := wasmReader{b: content}
			if name, err := r.bytes(); err == nil && string(name) == eagerElementsSection {
				elements = content[r.pos:]
				kept++
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if kept != 1 || elementSections != 1 {
		return nil, fmt.Errorf("wasmrewrite: the module has %d element sections and %d kept ones, not one of each (LazyTable did not rewrite it)", elementSections, kept)
	}
	out := append([]byte(nil), wasmHeader...)
	err = eachSection(module, func(id byte, content []byte) error {
		switch {
		case id == sectionElement:
			content = elements
		case id == sectionCustom:
			r := wasmReader{b: content}
			if name, _ := r.bytes(); string(name) == eagerElementsSection {
				return nil
			}
		}
		out = appendSection(out, id, content)
		return nil
	})
	return out, err
}

// EnsureLazyTable returns module with its function table filled on demand
// when it can be, and whether it is: module itself when it carries the
// exports already (HasTableExports: LazyTable rewrote it when it was
// built), LazyTable's rewrite of it when that succeeds, and module as it
// is otherwise (a table LazyTable leaves alone, or a malformed module,
// which compiling it reports).
func EnsureLazyTable(module []byte, exports TableExports) ([]byte, bool) {
	if ok, err := HasTableExports(module, exports); err != nil || ok {
		return module, ok
	}
	lazy, err := LazyTable(module, exports)
	if err != nil {
		return module, false
	}
	return lazy, true
}
