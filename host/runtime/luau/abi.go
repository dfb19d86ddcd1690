package luau

// The guest/host ABI of the Luau module: every number the host and the shim
// must agree on. They are the `#define`s of luau-build/shim/abi.h, one for
// one (abi_test.go reads the header and checks both sides), and nothing
// else lives in this file. Changing one means raising abiVersion there and
// here: the host refuses a module that speaks another version.

// abiVersion is TS_ABI_VERSION, which the module's ts_abi_version returns.
const abiVersion = 3

// Kinds ts_run reports (TS_KIND_*).
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

// flagIO is ts_run's and ts_lint's flag for the io library (TS_FLAG_IO).
const flagIO = 1

// flagEffects is ts_lint's flag for the records of lint --effects
// (TS_FLAG_EFFECTS).
const flagEffects = 2

// outSize is the size of ts_run's outcome: ptr, len, line, kind, each a
// little-endian 32-bit word (TS_OUT_SIZE).
const outSize = 16

// inputSize is the size of the shim's input buffer, ts_input_addr
// (TS_INPUT_SIZE).
const inputSize = 64 << 10

// luaErrMem is Luau's LUA_ERRMEM status (TS_LUA_ERRMEM).
const luaErrMem = 4

// abortOutOfMemory is the line the shim's abort passes when the front end
// ran out of memory (TS_ABORT_OUT_OF_MEMORY).
const abortOutOfMemory = -1

// MaxNestingDepth is how deep a result, a json value or an sdk response
// may nest (TS_JSON_MAX_DEPTH).
const MaxNestingDepth = 128

// The failure statuses of the io host functions (TS_IO_FAILED,
// TS_IO_OVER_LIMIT); the message waits for io_take.
const (
	ioFailed    = -1 // a sandbox refusal or I/O failure: error kind io
	ioOverLimit = -2 // a budget: error kind limit
)

// io_stat's pending record (TS_IO_STAT_*): a kind byte, then an
// existing entry's size and modification time (little-endian 64-bit), or
// a missing one's message.
const (
	statMissing   = 0
	statFile      = 1
	statDirectory = 2
	statLink      = 3
	statOther     = 4
	statRecord    = 17
)

// grepHeader is the size of a match's path length, line and text length
// in io_grep's pending result (TS_IO_GREP_HEADER).
const grepHeader = 12

// io_seek's whence (TS_SEEK_*), io.SeekStart and the others.
const (
	seekSet = 0
	seekCur = 1
	seekEnd = 2
)

// sdkDataOnly is set in sdk_call's id when the script takes no more than
// the data from the call (TS_SDK_DATA_ONLY): the guest then reads nothing
// of a successful response past its body, and an sdkcall.DataCaller spares the
// headers. A failure's headers are read: its error table has them.
const sdkDataOnly = 1 << 31

// envelopeInPlace is set in sdk_call's result when the envelope is in the
// call buffer (TS_SDK_ENVELOPE_IN_PLACE).
const envelopeInPlace = 1 << 31

// envelopeHeader is the size of the sdk envelope's seven 32-bit words
// (TS_SDK_ENVELOPE_HEADER). The failure word is an sdkcall.Failure (TS_SDK_OK,
// TS_SDK_ARGUMENT...).
const envelopeHeader = 7 * 4

// The envelope's body kind (TS_SDK_BODY_*).
const (
	bodyNone = 0
	bodyJSON = 1
	bodyText = 2
)

// bodyDryRun is set in the envelope's body kind when a dry run made the
// response up rather than sending the request (TS_SDK_BODY_DRY_RUN): the
// response table gets dry_run = true.
const bodyDryRun = 0x10000

// batchHeader is the size of a request's token, function id and argument
// length in sdk_submit's batch (TS_SDK_BATCH_HEADER).
const batchHeader = 12

// lintOutSize is the size of ts_lint_out's ptr and len (TS_LINT_OUT_SIZE).
const lintOutSize = 8

// lintRecordHeader is the size of a packed diagnostic before its rule and
// message: line, column, end line, end column, rule length, message length
// (TS_LINT_RECORD_HEADER).
const lintRecordHeader = 24
