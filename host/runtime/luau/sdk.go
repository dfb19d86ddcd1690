package luau

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"unicode/utf8"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/contract/sdkcall"
)

// The sdk seen from the runtime: the names in an sdkcall.Manifest, from
// which the shim builds the read-only sdk table once, in the instance every
// later one is restored from. Each function of that table hands its
// arguments to the host as one JSON text and gets one sdkcall.Response
// back, laid out in guest memory as an envelope.

// sdkCall is the host side of an sdk function: ts_host_sdk_call(L, id,
// args, len), id with sdkDataOnly set when the script takes only the data
// (then an sdkcall.DataCaller's CallData makes the call). It hands the
// arguments to the execution's sdkcall.Caller under a context that carries the
// execution's deadline and cancellation, and writes the response envelope
// over the shim's call buffer, which the
// arguments are in: the 32-bit word before them says how many bytes the
// buffer holds (sdk.cpp, callText). It returns the envelope's length with
// envelopeInPlace set; an envelope that does not fit goes into a buffer the
// guest allocates on L's stack (ts_sdk_buffer), and its length is returned
// alone. A call that outlives the execution's deadline stops the
// execution, as tick does.
func sdkCall(ctx context.Context, mod api.Module, L, id, argsPtr, argsLen uint32) uint32 {
	inst := instanceFrom(ctx)
	dataOnly := id&sdkDataOnly != 0
	id &^= sdkDataOnly
	mem := mod.Memory()
	args := bytes.Clone(view(mem, "sdk arguments", argsPtr, argsLen))

	resp := noSDK
	if inst.exec != nil && inst.exec.sdk != nil { // ctx carries the deadline
		if data, ok := inst.exec.sdk.(sdkcall.DataCaller); ok && dataOnly {
			resp = data.CallData(ctx, id, args)
		} else {
			resp = inst.exec.sdk.Call(ctx, id, args)
		}
	}
	defer resp.ReleaseOnce() // the bytes are the guest's below, or dropped
	inst.checkStopAfterCall(ctx)

	env := (*envelope)(resp)
	size := env.size()
	if argsPtr >= 4 && uint64(size) <= uint64(read32(mem, "sdk call buffer size", argsPtr-4)) {
		env.write(view(mem, "sdk call buffer", argsPtr-4, uint32(size)))
		return uint32(size) | envelopeInPlace
	}
	return inst.writeSDKBuffer(ctx, mod, L, size, env.write)
}

// exportSDK registers the host function of the sdk's calls.
func exportSDK(b wazero.HostModuleBuilder) {
	exportIIIII(b, "sdk_call", sdkCall)
}

// envelope is a response as the shim reads it (abi.h,
// TS_SDK_ENVELOPE_HEADER): seven little-endian 32-bit words (failure,
// status, body kind and the lengths of the message, headers, body and
// content), then those four. The headers
// are their count, then each name and value as a 32-bit length and its
// bytes (invalid UTF-8 replaced by U+FFFD).
type envelope sdkcall.Response

// write lays r's envelope out in buf, which is exactly its size: straight
// into guest memory, without a copy on the host.
func (r *envelope) write(buf []byte) {
	if out := r.appendTo(buf[:0]); len(out) != len(buf) || (len(buf) > 0 && &out[0] != &buf[0]) {
		panic(errors.New("luau: sdk envelope size mismatch"))
	}
}

// bytes is r's envelope in a new slice.
func (r *envelope) bytes() []byte {
	return r.appendTo(make([]byte, 0, r.size()))
}

// size is the length of r's envelope.
func (r *envelope) size() int {
	size := envelopeHeader + len(r.Message) + len(r.body()) + len(r.Content)
	if len(r.Headers) > 0 {
		size += 4
		for k, v := range r.Headers {
			size += 8 + textLen(k) + textLen(v)
		}
	}
	return size
}

// body is the body and its kind: bodyNone, bodyJSON or bodyText.
func (r *envelope) body() []byte {
	b, _ := r.bodyKind()
	return b
}

func (r *envelope) bodyKind() ([]byte, uint32) {
	switch {
	case r.JSON != nil:
		return r.JSON, bodyJSON
	case r.Text != nil:
		return r.Text, bodyText
	}
	return nil, bodyNone
}

// appendTo appends r's envelope to out.
func (r *envelope) appendTo(out []byte) []byte {
	body, bodyKind := r.bodyKind()
	start := len(out)
	out = append(out, make([]byte, envelopeHeader)...)
	out = append(out, r.Message...)
	if len(r.Headers) > 0 {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(r.Headers)))
		for k, v := range r.Headers {
			out = appendText(out, k)
			out = appendText(out, v)
		}
	}
	headersLen := len(out) - start - envelopeHeader - len(r.Message)
	out = append(out, body...)
	out = append(out, r.Content...)
	if r.DryRun {
		bodyKind |= bodyDryRun
	}
	for i, w := range [7]uint32{uint32(r.Fail), uint32(r.Status), bodyKind,
		uint32(len(r.Message)), uint32(headersLen), uint32(len(body)), uint32(len(r.Content))} {
		binary.LittleEndian.PutUint32(out[start+4*i:], w)
	}
	return out
}

// textLen is the length of s as appendText writes it.
func textLen(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	n := 0
	for _, r := range s {
		n += utf8.RuneLen(r)
	}
	return n
}

// appendText appends s as a 32-bit length and its bytes, each byte of
// invalid UTF-8 replaced by U+FFFD (as json.Marshal does).
func appendText(out []byte, s string) []byte {
	n := textLen(s)
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	if n == len(s) { // valid: each invalid byte would have become three
		return append(out, s...)
	}
	for _, r := range s {
		out = utf8.AppendRune(out, r)
	}
	return out
}
