// abi.h: the guest/host ABI of the Luau module, in one place.
//
// Every number the Go host (host/runtime/luau) and this shim must agree on is
// defined here, one `#define TS_NAME value` a line; host/runtime/luau/abi.go holds
// the same constants and a test there reads this file and checks that both
// sides define the same names with the same values. Changing anything here
// means raising TS_ABI_VERSION: the host refuses a module whose version
// (the exported ts_abi_version) is not its own.
#pragma once

// The version of this ABI, returned by the exported ts_abi_version.
#define TS_ABI_VERSION 3

// Kinds of outcome ts_run reports (TsKind in shim.h).
#define TS_KIND_OK 0
#define TS_KIND_SYNTAX 1
#define TS_KIND_RUNTIME 2
#define TS_KIND_MEMORY 3
#define TS_KIND_LIMIT 4
#define TS_KIND_IO 5
#define TS_KIND_INTERNAL 6
#define TS_KIND_UPSTREAM 7

// Flags of ts_run and ts_lint: the optional libraries a script gets.
#define TS_FLAG_IO 1
// ts_lint only: also report what the script can change (lint --effects),
// as records of the kinds effects_sdk, effects_io and effects_unnamed after
// the diagnostics.
#define TS_FLAG_EFFECTS 2

// The size of ts_run's outcome (ts_out_addr): ptr, len, line, kind, each a
// little-endian 32-bit word.
#define TS_OUT_SIZE 16

// The size of the input buffer at ts_input_addr.
#define TS_INPUT_SIZE 65536

// Luau's LUA_ERRMEM: the status the host's throw receives for out of memory.
#define TS_LUA_ERRMEM 4

// The line abort passes when the front end ran out of memory.
#define TS_ABORT_OUT_OF_MEMORY -1

// How deep a JSON value (a result, json.decode's input, an sdk response)
// may nest.
#define TS_JSON_MAX_DEPTH 128

// The failure statuses of the io host functions; the message waits for
// io_take.
#define TS_IO_FAILED -1
#define TS_IO_OVER_LIMIT -2

// io_stat's pending record: a kind byte (TS_IO_STAT_*), then, for an
// entry that exists, its size and modification time (Unix seconds) as
// little-endian 64-bit integers; for one that does not, the message.
#define TS_IO_STAT_MISSING 0
#define TS_IO_STAT_FILE 1
#define TS_IO_STAT_DIRECTORY 2
#define TS_IO_STAT_LINK 3
#define TS_IO_STAT_OTHER 4
#define TS_IO_STAT_RECORD 17

// A match of io_grep's pending result: path length, line number and text
// length (little-endian 32-bit words), then the path and the text.
#define TS_IO_GREP_HEADER 12

// io_seek's whence.
#define TS_SEEK_SET 0
#define TS_SEEK_CUR 1
#define TS_SEEK_END 2

// Set in sdk_call's function id when the script takes at most the data.
#define TS_SDK_DATA_ONLY 0x80000000
// Set in sdk_call's result when the envelope is in the call buffer.
#define TS_SDK_ENVELOPE_IN_PLACE 0x80000000

// The sdk response envelope: TS_SDK_ENVELOPE_HEADER bytes of seven
// little-endian 32-bit words (failure, status, body kind and the lengths of
// the message, headers, body and content), then those four back to back.
#define TS_SDK_ENVELOPE_HEADER 28
// The envelope's failure word.
#define TS_SDK_OK 0
#define TS_SDK_ARGUMENT 1
#define TS_SDK_UPSTREAM 2
#define TS_SDK_LIMIT 3
// The envelope's body kind word.
#define TS_SDK_BODY_NONE 0
#define TS_SDK_BODY_JSON 1
#define TS_SDK_BODY_TEXT 2
// Set in the body kind word when a dry run made the response up rather
// than sending the request: the response table gets dry_run = true.
#define TS_SDK_BODY_DRY_RUN 0x10000

// A request of sdk_submit's batch: token, function id and argument length
// (little-endian 32-bit words), then the arguments.
#define TS_SDK_BATCH_HEADER 12

// ts_lint's output (ts_lint_out): ptr, len of the packed diagnostics.
#define TS_LINT_OUT_SIZE 8
// A packed diagnostic before its rule and message: line, column, end line,
// end column, rule length, message length (little-endian 32-bit words).
#define TS_LINT_RECORD_HEADER 24
