package wasm

// The two exports with which the function table of Binary is seen and
// filled: luau-build/build.sh has the table filled on demand
// (internal/wasmrewrite.LazyTable), which adds them. TableUsedExport(out,
// capacity) writes at out the indices of the table's filled entries, at
// most capacity, and returns how many; TableFillExport(list, n) fills the
// n entries whose indices are at list.
const (
	TableFillExport = "ts_table_fill"
	TableUsedExport = "ts_table_used"
)
