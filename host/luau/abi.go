package luau

import "github.com/toolscript/toolscript/host/sdkcall"

// Kinds ts_run reports; they mirror enum TsKind in luau-build/shim/shim.h.
const (
	kindOK       = 0
	kindSyntax   = 1
	kindRuntime  = 2
	kindMemory   = 3
	kindLimit    = 4
	kindIO       = 5
	kindInternal = 6
	kindUpstream = 7
)

// outSize is the size of the shim's Out struct: ptr, len, line, kind, each a
// little-endian 32-bit word.
const outSize = 16

// initHeapLimit bounds the Luau heap while ts_init builds the environment,
// before ts_run sets the script's own limit.
const initHeapLimit = 16 << 20

// luaErrMem is Luau's LUA_ERRMEM status.
const luaErrMem = 4

// inputSize is the size of the shim's input buffer (ts_input_addr).
const inputSize = 64 << 10

// flagIO is ts_run's flag for the io library (TS_FLAG_IO in shim.h).
const flagIO = 1

// abortOutOfMemory is the line the shim's abort passes when the front end
// ran out of memory (std::bad_alloc before the script runs).
const abortOutOfMemory = -1

// MaxProgressMessageBytes caps a progress() message; a longer one is cut at
// a character boundary and ends with progressCutMarker.
const MaxProgressMessageBytes = 1024

const progressCutMarker = "... (cut)"

// MaxNestingDepth is how deep a result, a json value or an sdk response
// may nest: the shim's TS_JSON_MAX_DEPTH (shim.h), which a test keeps equal.
const MaxNestingDepth = sdkcall.MaxNestingDepth
