package wasmrewrite

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"math"
	"runtime"
	"slices"
	"sync"
)

// TableExports names the two functions LazyTable adds to a module and
// exports, which let the host see and fill the table ahead:
//   - Used(out, capacity i32) i32 writes, at out, the indices of the
//     table's filled entries, at most capacity of them, and returns how
//     many;
//   - Fill(list, n i32) fills the n entries whose indices are at list.
//
// Their presence marks a module LazyTable has rewritten (HasTableExports).
type TableExports struct {
	Fill, Used string
}

// LazyTable returns module changed so that its function table is filled
// on demand instead of when an instance is created.
//
// A C or C++ module keeps every function whose address is taken (a
// library's functions, an interpreter's builtins, virtual methods) in one
// table, which an active element segment fills at instantiation: wazero
// then makes a function reference for each entry, which can be half of
// what creating an instance costs, although a short run calls a few of
// them. In the result the table starts empty (the segment becomes
// declarative, so that ref.func may name its functions), and every
// call_indirect is preceded by an inline guard (rewriteBody): when the
// entry it is about to call is still empty, an added function, fill,
// stores there with ref.func and table.set the function the segment had
// put there. The table holds the same function at the same index when it
// is called as it did before, so calls go where they went; an index the
// segment left empty, or one outside the table, traps in call_indirect or
// table.get as it did. Two added exports, named by exports, let the host
// see and fill the table ahead. The original element section is kept in
// a custom section, from which EagerTable restores it.
//
// Only a module whose table nothing else reads or changes is rewritten:
// one funcref table, defined by the module and not exported, one memory,
// an export section, active segments of function indices at constant
// offsets, and no instruction
// that reads, writes or names a table entry (table.get, table.set,
// table.init, ref.func, ...) besides call_indirect on that table. The
// function bodies are read instruction by instruction; an instruction this
// reader does not know (SIMD, threads, exception handling, tail calls) is
// ErrUnsupportedTable, as is any of the above, and the module is then
// to be used as it is.
func LazyTable(module []byte, exports TableExports) ([]byte, error) {
	if exports.Fill == "" || exports.Used == "" || exports.Fill == exports.Used {
		return nil, fmt.Errorf("wasmrewrite: the added exports need two different names, not %q and %q", exports.Fill, exports.Used)
	}
	m := lazyModule{codeIndex: -1, names: exports}
	if err := eachSection(module, func(id byte, content []byte) error {
		m.sections = append(m.sections, rawSection{id: id, content: content})
		return m.read(id, content)
	}); err != nil {
		return nil, err
	}
	if m.tables != 1 || m.memories != 1 || !m.hasExports || len(m.entries) == 0 || m.codeIndex < 0 {
		return nil, ErrUnsupportedTable
	}
	m.indices = slices.Sorted(maps.Keys(m.entries))
	if m.indices[len(m.indices)-1]-m.indices[0] >= maxLazyTable {
		return nil, ErrUnsupportedTable
	}
	return m.write()
}

// maxLazyTable bounds the span of table indices fill covers: its br_table
// has one case per index.
const maxLazyTable = 1 << 16

// ErrUnsupportedTable is returned for a module LazyTable leaves alone.
var ErrUnsupportedTable = errors.New("wasmrewrite: the module's function table cannot be filled on demand")

const (
	sectionCustom   = 0
	sectionType     = 1
	sectionImport   = 2
	sectionFunction = 3
	sectionTable    = 4
	sectionMemory   = 5
	sectionExport   = 7
	sectionElement  = 9
	sectionCode     = 10

	refTypeFuncref = 0x70
	externTable    = 1
)

type rawSection struct {
	id      byte
	content []byte
}

// lazyModule is what LazyTable reads of a module.
type lazyModule struct {
	sections []rawSection
	// names are the exports to add.
	names TableExports
	// types, importedFuncs, funcs and exports count the type section's
	// types, the imported functions, the function section's functions and
	// the exports.
	types, importedFuncs, funcs, exports uint32
	// tables and memories count the tables and memories, defined or
	// imported: ts_table_fill and ts_table_used need memory 0.
	tables, memories int
	// params are the types' numbers of parameters, funcTypes the type of
	// each function of the function section.
	params    []uint32
	funcTypes []uint32
	// entries maps a table index to the function the segments put there;
	// indices are its keys in order.
	entries map[uint32]uint32
	indices []uint32
	// elements is the element section's content, which the rewrite keeps
	// in a custom section (EagerTable).
	elements []byte
	// hasExports says that the module has an export section, which the
	// added exports join.
	hasExports bool
	// codeIndex is the code section's index in sections, or -1.
	codeIndex int
}

func (m *lazyModule) read(id byte, content []byte) error {
	r := wasmReader{b: content}
	var err error
	switch id {
	case sectionType:
		err = m.readTypes(&r)
	case sectionImport:
		err = m.readImports(&r)
	case sectionFunction:
		err = m.readFunctions(&r)
	case sectionTable:
		err = m.readTables(&r)
	case sectionMemory:
		var n uint32
		n, err = r.u32()
		m.memories += int(n)
	case sectionExport:
		m.hasExports = true
		m.exports, err = m.checkTableNotExported(&r)
	case sectionElement:
		err = m.readElements(&r)
	case sectionCode:
		if m.codeIndex >= 0 {
			return ErrUnsupportedTable
		}
		m.codeIndex = len(m.sections) - 1
	case sectionCustom:
		if name, _ := r.bytes(); string(name) == eagerElementsSection {
			return ErrUnsupportedTable // rewritten already
		}
	}
	return err
}

func (m *lazyModule) readTypes(r *wasmReader) error {
	n, err := r.vector(func() error {
		if form, err := r.byte(); err != nil || form != 0x60 {
			return ErrUnsupportedTable // not a function type
		}
		params, err := r.bytes() // one byte a value type, in 1.0
		if err != nil {
			return err
		}
		if _, err := r.bytes(); err != nil { // results
			return err
		}
		m.params = append(m.params, uint32(len(params)))
		return nil
	})
	m.types = n
	return err
}

func (m *lazyModule) readFunctions(r *wasmReader) error {
	n, err := r.vector(func() error {
		t, err := r.u32()
		if err != nil {
			return err
		}
		if t >= uint32(len(m.params)) {
			return fmt.Errorf("function of type %d, of %d types", t, len(m.params))
		}
		m.funcTypes = append(m.funcTypes, t)
		return nil
	})
	m.funcs = n
	return err
}

func (m *lazyModule) readImports(r *wasmReader) error {
	_, err := r.vector(func() error {
		for range 2 { // module and name
			if _, err := r.bytes(); err != nil {
				return err
			}
		}
		kind, err := r.byte()
		if err != nil {
			return err
		}
		switch kind {
		case 0: // function: a type index
			m.importedFuncs++
			_, err = r.u32()
		case externTable: // the table would be shared: leave it alone
			return ErrUnsupportedTable
		case 2: // memory: limits
			m.memories++
			err = r.limits()
		case 3: // global: a value type and mutability
			_, err = r.byte()
			if err == nil {
				_, err = r.byte()
			}
		default:
			return ErrUnsupportedTable
		}
		return err
	})
	return err
}

func (m *lazyModule) readTables(r *wasmReader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	if n != 1 {
		return ErrUnsupportedTable
	}
	if t, err := r.byte(); err != nil || t != refTypeFuncref {
		return ErrUnsupportedTable
	}
	m.tables++
	return r.limits()
}

// checkTableNotExported reads the export section, and returns how many
// exports it has.
func (m *lazyModule) checkTableNotExported(r *wasmReader) (uint32, error) {
	n, err := r.vector(func() error {
		name, kind, err := r.export()
		if err != nil {
			return err
		}
		if kind == externTable || string(name) == m.names.Fill || string(name) == m.names.Used {
			return ErrUnsupportedTable
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// readElements reads active segments of function indices on table 0 at
// constant offsets (kinds 0 and 2), the only kinds supported.
func (m *lazyModule) readElements(r *wasmReader) error {
	n, err := r.u32()
	if err != nil {
		return err
	}
	m.entries = make(map[uint32]uint32)
	for range n {
		kind, err := r.u32()
		if err != nil {
			return err
		}
		switch kind {
		case 0:
		case 2:
			if table, err := r.u32(); err != nil || table != 0 {
				return ErrUnsupportedTable
			}
		default:
			return ErrUnsupportedTable
		}
		offset, err := r.constOffset()
		if errors.Is(err, ErrUnsupportedData) {
			return ErrUnsupportedTable
		} else if err != nil {
			return err
		}
		if kind == 2 {
			if elemKind, err := r.byte(); err != nil || elemKind != 0 {
				return ErrUnsupportedTable
			}
		}
		count, err := r.u32()
		if err != nil {
			return err
		}
		for i := range count {
			fn, err := r.u32()
			if err != nil {
				return err
			}
			m.entries[offset+i] = fn
		}
	}
	m.elements = r.b
	return nil
}

// limits reads a table's or memory's limits.
func (r *wasmReader) limits() error {
	flags, err := r.byte()
	if err != nil {
		return err
	}
	if flags > 1 {
		return ErrUnsupportedTable // shared or 64-bit
	}
	if _, err := r.u32(); err != nil {
		return err
	}
	if flags == 1 {
		_, err = r.u32()
	}
	return err
}

// The functions LazyTable adds, in this order after the module's own.
const (
	addedFill      = iota // fill(i i32)
	addedTableFill        // exported as TableExports.Fill: (list, n i32)
	addedTableUsed        // exported as TableExports.Used: (out, capacity i32) i32
	addedFunctions
)

// write returns the rewritten module.
func (m *lazyModule) write() ([]byte, error) {
	first := m.importedFuncs + m.funcs // the first added function's index
	bodies := [addedFunctions][]byte{
		addedFill:      m.fillBody(),
		addedTableFill: tableFillBody(first + addedFill),
		addedTableUsed: m.tableUsedBody(),
	}
	code, err := m.rewriteCode(first+addedFill, bodies[:])
	if err != nil {
		return nil, err
	}
	size := len(wasmHeader) + len(code)
	for _, s := range m.sections {
		size += len(s.content) + 2*binary.MaxVarintLen32 + 64
	}
	out := append(make([]byte, 0, size), wasmHeader...)
	for i, s := range m.sections {
		content := s.content
		switch {
		case i == m.codeIndex:
			content = code
		case s.id == sectionType:
			content = recount(content, m.types+addedFunctions, []byte{
				0x60, 1, valI32, 0, // fill
				0x60, 2, valI32, valI32, 0, // ts_table_fill
				0x60, 2, valI32, valI32, 1, valI32, // ts_table_used
			})
		case s.id == sectionFunction:
			var types []byte
			for f := range uint32(addedFunctions) {
				types = binary.AppendUvarint(types, uint64(m.types+f))
			}
			content = recount(content, m.funcs+addedFunctions, types)
		case s.id == sectionExport:
			var exports []byte
			for _, e := range []struct {
				name string
				fn   uint32
			}{{m.names.Fill, addedTableFill}, {m.names.Used, addedTableUsed}} {
				exports = binary.AppendUvarint(exports, uint64(len(e.name)))
				exports = append(exports, e.name...)
				exports = binary.AppendUvarint(append(exports, 0), uint64(first+e.fn))
			}
			content = recount(content, m.exports+2, exports)
		case s.id == sectionElement:
			content = m.declarativeElements()
		}
		out = appendSection(out, s.id, content)
	}
	return appendSection(out, sectionCustom, customSection(eagerElementsSection, m.elements)), nil
}

// recount returns a vector section's content with its count set to n and
// more appended.
func recount(content []byte, n uint32, more []byte) []byte {
	r := wasmReader{b: content}
	_, _ = r.u32() // read before: the section is well formed
	out := binary.AppendUvarint(nil, uint64(n))
	out = append(out, content[r.pos:]...)
	return append(out, more...)
}

// declarativeElements is one declarative segment naming every function
// the segments put in the table, which makes ref.func on them valid.
func (m *lazyModule) declarativeElements() []byte {
	out := []byte{1, 3, 0} // one segment: declarative, of function indices
	out = binary.AppendUvarint(out, uint64(len(m.entries)))
	for _, index := range m.indices {
		out = binary.AppendUvarint(out, uint64(m.entries[index]))
	}
	return out
}

// Opcodes and types the added functions use.
const (
	opBlock      = 0x02
	opLoop       = 0x03
	opIf         = 0x04
	opBr         = 0x0c
	opBrIf       = 0x0d
	opBrTable    = 0x0e
	opReturn     = 0x0f
	opCall       = 0x10
	opCallInd    = 0x11
	opDrop       = 0x1a
	opLocalGet   = 0x20
	opLocalSet   = 0x21
	opLocalTee   = 0x22
	opTableGet   = 0x25
	opTableSet   = 0x26
	opI32Load    = 0x28
	opI32Store   = 0x36
	opI32Eqz     = 0x45
	opI32GeU     = 0x4f
	opI32Add     = 0x6a
	opI32Sub     = 0x6b
	opI32Mul     = 0x6c
	opRefIsNull  = 0xd1
	opRefFunc    = 0xd2
	blockTypeNil = 0x40
	valI32       = 0x7f
)

// fillBody is fill(i): a br_table over the segments' indices, each case
// storing its function at i with ref.func and table.set. An index no
// segment filled does nothing.
func (m *lazyModule) fillBody() []byte {
	lo, hi := m.indices[0], m.indices[len(m.indices)-1]
	cases := hi - lo + 1
	b := []byte{0} // no locals
	for range cases + 1 {
		b = append(b, opBlock, blockTypeNil)
	}
	b = append(b, opLocalGet, 0, opI32Const)
	b = appendSLEB128(b, int32(lo))
	b = append(b, opI32Sub, opBrTable)
	b = binary.AppendUvarint(b, uint64(cases))
	for c := range cases {
		b = binary.AppendUvarint(b, uint64(c))
	}
	b = binary.AppendUvarint(b, uint64(cases)) // default: past every case
	for c := range cases {
		b = append(b, opEnd) // case c starts after the end of block c
		if fn, ok := m.entries[lo+c]; ok {
			b = append(b, opLocalGet, 0, opRefFunc)
			b = binary.AppendUvarint(b, uint64(fn))
			b = append(b, opTableSet, 0)
		}
		b = append(b, opReturn)
	}
	return append(b, opEnd, opEnd) // the outermost block, the function
}

// tableFillBody is ts_table_fill(list, n): fill(list[k]) for each k < n.
func tableFillBody(fill uint32) []byte {
	b := []byte{0, opBlock, blockTypeNil, opLoop, blockTypeNil,
		opLocalGet, 1, opI32Eqz, opBrIf, 1, // n == 0: done
		opLocalGet, 0, opI32Load, 2, 0, opCall}
	b = binary.AppendUvarint(b, uint64(fill))
	return append(b,
		opLocalGet, 0, opI32Const, 4, opI32Add, opLocalSet, 0, // list += 4
		opLocalGet, 1, opI32Const, 1, opI32Sub, opLocalSet, 1, // n--
		opBr, 0, opEnd, opEnd, opEnd)
}

// tableUsedBody is ts_table_used(out, capacity): for each index i of the
// segments whose entry is filled, while fewer than capacity were written,
// out[n] = i; it returns n.
func (m *lazyModule) tableUsedBody() []byte {
	lo, hi := m.indices[0], m.indices[len(m.indices)-1]
	// Locals 2 (i) and 3 (n).
	b := []byte{1, 2, valI32, opI32Const}
	b = appendSLEB128(b, int32(lo))
	b = append(b, opLocalSet, 2, opBlock, blockTypeNil, opLoop, blockTypeNil,
		opLocalGet, 2, opI32Const)
	b = appendSLEB128(b, int32(hi+1))
	return append(b, opI32GeU, opBrIf, 1, // i > hi: done
		opLocalGet, 3, opLocalGet, 1, opI32GeU, opBrIf, 1, // n >= capacity: done
		opLocalGet, 2, opTableGet, 0, opRefIsNull, opI32Eqz, opIf, blockTypeNil,
		opLocalGet, 0, opLocalGet, 3, opI32Const, 4, opI32Mul, opI32Add,
		opLocalGet, 2, opI32Store, 2, 0, // out[n] = i
		opLocalGet, 3, opI32Const, 1, opI32Add, opLocalSet, 3, // n++
		opEnd,
		opLocalGet, 2, opI32Const, 1, opI32Add, opLocalSet, 2, // i++
		opBr, 0, opEnd, opEnd,
		opLocalGet, 3, opEnd)
}

// rewriteCode returns the code section with every call_indirect guarded
// (rewriteBody), and the added bodies appended. The bodies are rewritten
// in as many runs, at once, as the process has processors.
func (m *lazyModule) rewriteCode(fill uint32, added [][]byte) ([]byte, error) {
	section := m.sections[m.codeIndex].content
	r := wasmReader{b: section}
	n, err := r.u32()
	if err != nil {
		return nil, fmt.Errorf("wasmrewrite: code section: %w", err)
	}
	if n != m.funcs {
		return nil, fmt.Errorf("wasmrewrite: %d function bodies for %d functions", n, m.funcs)
	}
	bodies := make([][]byte, n)
	for i := range bodies {
		if bodies[i], err = r.bytes(); err != nil {
			return nil, fmt.Errorf("wasmrewrite: function body %d: %w", i, err)
		}
	}
	if r.pos != len(section) {
		return nil, errors.New("wasmrewrite: code section has bytes after its bodies")
	}
	runs := make([][]byte, max(1, min(runtime.GOMAXPROCS(0), len(bodies)/64)))
	errs := make([]error, len(runs))
	var wg sync.WaitGroup
	for k := range runs {
		wg.Go(func() {
			from, to := k*len(bodies)/len(runs), (k+1)*len(bodies)/len(runs)
			runs[k], errs[k] = m.rewriteBodies(bodies[from:to], uint32(from), fill)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		if errors.Is(err, ErrUnsupportedTable) {
			return nil, ErrUnsupportedTable
		}
		return nil, err
	}
	size := len(section) + len(section)/16
	out := binary.AppendUvarint(make([]byte, 0, size), uint64(n+uint32(len(added))))
	for _, run := range runs {
		out = append(out, run...)
	}
	for _, b := range added {
		out = binary.AppendUvarint(out, uint64(len(b)))
		out = append(out, b...)
	}
	return out, nil
}

// rewriteBodies rewrites the bodies of the functions first, first+1, ...
// and returns them one after the other, each after its size.
func (m *lazyModule) rewriteBodies(bodies [][]byte, first, fill uint32) ([]byte, error) {
	size := 0
	for _, b := range bodies {
		size += len(b) + len(b)/16 + binary.MaxVarintLen32
	}
	out := make([]byte, 0, size)
	var body []byte
	for i, src := range bodies {
		var err error
		body, err = rewriteBody(body[:0], src, m.params[m.funcTypes[first+uint32(i)]], fill)
		if err != nil {
			if errors.Is(err, ErrUnsupportedTable) {
				return nil, err
			}
			return nil, fmt.Errorf("wasmrewrite: function body %d: %w", first+uint32(i), err)
		}
		out = binary.AppendUvarint(out, uint64(len(body)))
		out = append(out, body...)
	}
	return out, nil
}

// rewriteBody appends src, the body of a function with params
// parameters, to out with every call_indirect guarded: the index it is
// about to call is kept in an added local, and fill(index) runs first if
// that entry is empty. The guard is inline rather than a call to a guard
// function: the interpreter's loop calls through the table (interrupts,
// fast calls, C functions) and a call more each time cost it up to a
// tenth.
func rewriteBody(out, src []byte, params, fill uint32) ([]byte, error) {
	r := wasmReader{b: src}
	groups, err := r.u32()
	if err != nil {
		return nil, err
	}
	groupsEnd := r.pos
	locals := uint64(params)
	for range groups {
		n, err := r.u32()
		if err != nil {
			return nil, err
		}
		if _, err := r.byte(); err != nil {
			return nil, err
		}
		locals += uint64(n)
	}
	code := r.pos
	sites, err := callIndirectSites(src, code)
	if err != nil {
		return nil, err
	}
	if len(sites) == 0 {
		return append(out, src...), nil
	}
	if locals >= math.MaxUint32 {
		return nil, ErrUnsupportedTable // no room for the scratch local
	}
	// The local groups, and one more: the scratch local.
	out = binary.AppendUvarint(out, uint64(groups)+1)
	out = append(out, src[groupsEnd:code]...)
	out = append(out, 1, valI32)
	scratch := binary.AppendUvarint(nil, locals)
	guard := append([]byte{opLocalTee}, scratch...)
	guard = append(guard, opTableGet, 0, opRefIsNull, opIf, blockTypeNil, opLocalGet)
	guard = append(guard, scratch...)
	guard = binary.AppendUvarint(append(guard, opCall), uint64(fill))
	guard = append(append(guard, opEnd, opLocalGet), scratch...)
	start := code
	for _, at := range sites {
		out = append(out, src[start:at]...)
		out = append(out, guard...)
		start = at
	}
	return append(out, src[start:]...), nil
}

// callIndirectSites returns the offsets in body of its call_indirect
// instructions, reading its instructions from offset code on. This is
// the loop that reads every byte of the module's code: the commonest
// instructions (no immediate, one number, a memory
// access with a one-byte alignment) are read inline; the rest and every
// error go through skipImmediates.
func callIndirectSites(body []byte, code int) ([]int, error) {
	var sites []int
	r := wasmReader{b: body, pos: code}
	for r.pos < len(body) {
		op := body[r.pos]
		r.pos++
		switch immediatesOf[op] {
		case noImmediate:
			continue
		case oneLEB:
			if end := lebEnd(body, r.pos); end > 0 {
				r.pos = end
				continue
			}
		case twoLEBs:
			if r.pos < len(body) && body[r.pos] < 0x40 {
				if end := lebEnd(body, r.pos+1); end > 0 {
					r.pos = end
					continue
				}
			}
		case callIndirectImm:
			sites = append(sites, r.pos-1)
		}
		if err := r.skipImmediates(op); err != nil {
			return nil, err
		}
	}
	return sites, nil
}

// lebEnd returns the offset just past the LEB128 number at b[pos:], or 0
// if it does not end within b or within 10 bytes.
func lebEnd(b []byte, pos int) int {
	for i := pos; i < len(b) && i < pos+10; i++ {
		if b[i] < 0x80 {
			return i + 1
		}
	}
	return 0
}

// immediates is what follows an opcode, by opcode (immediatesOf).
type immediates uint8

const (
	// unknownOp: an instruction skipImmediates does not read (SIMD,
	// threads, exception handling, tail calls, the table instructions).
	unknownOp immediates = iota
	noImmediate
	oneLEB
	twoLEBs // a memarg: alignment and offset
	blockTypeImm
	brTableImm
	selectTypesImm
	callIndirectImm
	fourBytes
	eightBytes
	miscImm // the 0xfc prefix
)

// immediatesOf classifies the opcodes of WebAssembly 1.0 with the
// sign-extension, non-trapping conversion, bulk memory and multi-value
// extensions.
var immediatesOf = func() (t [256]immediates) {
	set := func(kind immediates, ops ...byte) {
		for _, op := range ops {
			t[op] = kind
		}
	}
	set(noImmediate, 0x00, 0x01, 0x05, 0x0b, 0x0f, 0x1a, 0x1b)
	for op := 0x45; op <= 0xc4; op++ {
		t[op] = noImmediate // numeric instructions, sign extension
	}
	set(blockTypeImm, 0x02, 0x03, 0x04)
	set(oneLEB, 0x0c, 0x0d, 0x10, 0x20, 0x21, 0x22, 0x23, 0x24, 0x3f, 0x40, opI32Const, 0x42)
	set(brTableImm, opBrTable)
	set(callIndirectImm, opCallInd)
	set(selectTypesImm, 0x1c)
	for op := 0x28; op <= 0x3e; op++ {
		t[op] = twoLEBs
	}
	set(fourBytes, 0x43)
	set(eightBytes, 0x44)
	set(miscImm, 0xfc)
	return t
}()

// skipImmediates reads the immediates of an instruction whose opcode op
// was just read. An instruction it does not know (immediatesOf), and one
// that touches a table other than through call_indirect on table 0, is
// ErrUnsupportedTable.
func (r *wasmReader) skipImmediates(op byte) error {
	switch immediatesOf[op] {
	case noImmediate:
		return nil
	case oneLEB:
		return r.skipLEB()
	case twoLEBs:
		return r.memArg()
	case blockTypeImm:
		return r.blockType()
	case brTableImm:
		n, err := r.u32()
		for i := uint64(0); err == nil && i <= uint64(n); i++ {
			err = r.skipLEB()
		}
		return err
	case callIndirectImm:
		if err := r.skipLEB(); err != nil {
			return err
		}
		table, err := r.u32()
		if err == nil && table != 0 {
			return ErrUnsupportedTable
		}
		return err
	case selectTypesImm:
		n, err := r.u32()
		if err != nil {
			return err
		}
		return r.skip(int(min(n, 1<<20)))
	case fourBytes:
		return r.skip(4)
	case eightBytes:
		return r.skip(8)
	case miscImm:
		return r.skipMisc()
	}
	return ErrUnsupportedTable
}

// skipMisc reads a 0xfc instruction: saturating conversions and bulk
// memory. The table instructions of the prefix are ErrUnsupportedTable.
func (r *wasmReader) skipMisc() error {
	sub, err := r.u32()
	if err != nil {
		return err
	}
	immediates := 0
	switch {
	case sub <= 7: // trunc_sat
	case sub == 8, sub == 10: // memory.init, memory.copy
		immediates = 2
	case sub == 9, sub == 11: // data.drop, memory.fill
		immediates = 1
	default:
		return ErrUnsupportedTable
	}
	for range immediates {
		if _, err := r.u32(); err != nil {
			return err
		}
	}
	return nil
}

func (r *wasmReader) blockType() error {
	c, err := r.byte()
	if err != nil {
		return err
	}
	switch c {
	case blockTypeNil, 0x7f, 0x7e, 0x7d, 0x7c:
		return nil
	}
	r.pos--
	return r.skipLEB() // a type index, as a signed 33-bit number
}

func (r *wasmReader) memArg() error {
	if r.pos < len(r.b) && r.b[r.pos] < 0x40 { // the common case: one byte
		r.pos++
		return r.skipLEB()
	}
	align, err := r.u32()
	if err != nil {
		return err
	}
	if align&0x40 != 0 { // multiple memories: a memory index follows
		return ErrUnsupportedTable
	}
	_, err = r.u32()
	return err
}

// skipLEB reads a LEB128 number of up to 64 bits without decoding it.
func (r *wasmReader) skipLEB() error {
	end := min(len(r.b), r.pos+10)
	for i := r.pos; i < end; i++ {
		if r.b[i] < 0x80 {
			r.pos = i + 1
			return nil
		}
	}
	if end == len(r.b) {
		return errTruncated
	}
	return errors.New("LEB128 number too long")
}

func (r *wasmReader) skip(n int) error {
	if len(r.b)-r.pos < n {
		return errTruncated
	}
	r.pos += n
	return nil
}
