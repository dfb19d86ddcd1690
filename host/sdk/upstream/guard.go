package upstream

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// guardBuffer is how much of a server's output a lineGuard reads at once.
const guardBuffer = 64 << 10

// cutEnd ends the part of a refused message that was passed on: a NUL
// byte is invalid JSON inside a string and out of one, so mcp-go's
// decoder refuses the line (and drops it) whatever was cut, never taking
// a prefix of a message for a message.
var cutEnd = []byte("\x00\n")

// lineGuard reads a stdio server's standard output for mcp-go's
// transport (one JSON-RPC message a line) and holds every message to the
// cap on its size (max bytes, the newline not counted; 0 for none) and to
// the bounds a scan checks (maxDepth, maxBlocks). A message within them
// passes as it is. A message that passes one is refused without being
// held: the bytes up to that point have passed already, and get cutEnd
// after them; the rest of the line is read and dropped as it comes, while
// the scan goes on looking for its id. Once the line has ended, the
// guard passes what refuse returns for it instead: an error response to
// the call the message answers (id, raw; nil when it answers none), so
// that call alone fails at once and the connection goes on serving the
// others.
type lineGuard struct {
	r      io.Reader
	max    int64
	refuse func(id []byte, why overKind) []byte
	// admit, when not nil, decides whether a whole line within the bounds
	// passes: one it does not admit is dropped as a refused one is (its
	// bytes passed already get cutEnd instead of their newline).
	admit func(*scan) bool

	buf  []byte
	in   []byte // read and not yet handled
	out  []byte // to pass before anything of in
	err  error  // the reader's, returned once in is used up
	size int64  // bytes of the current line passed so far
	// skipping is why the current line is being dropped; notOver while
	// it passes.
	skipping overKind
	scan     scan
}

func newLineGuard(r io.Reader, max int64, refuse func(id []byte, why overKind) []byte) *lineGuard {
	return &lineGuard{r: r, max: max, refuse: refuse, buf: make([]byte, guardBuffer)}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		if len(g.out) > 0 {
			n := copy(p, g.out)
			g.out = g.out[n:]
			return n, nil
		}
		if len(g.in) == 0 {
			if g.err != nil {
				return 0, g.err
			}
			n, err := g.r.Read(g.buf)
			g.in, g.err = g.buf[:n], err
			continue
		}
		end := bytes.IndexByte(g.in, '\n')
		if g.skipping != notOver {
			if end < 0 {
				g.scan.feed(g.in, false)
				g.in = nil
				continue
			}
			g.scan.feed(g.in[:end], false)
			g.in = g.in[end+1:]
			g.out = g.refuse(g.scan.answers(), g.skipping)
			g.nextLine()
			continue
		}
		if end < 0 {
			end = len(g.in)
		}
		take := min(end, len(p))
		why := notOver
		if g.max > 0 && int64(take) > g.max-g.size {
			take = int(g.max - g.size)
			if take == 0 {
				why = overSize // nothing more of this line fits
			}
		}
		if why == notOver {
			take, why = g.scan.feed(g.in[:take], true)
		}
		n := copy(p, g.in[:take])
		g.in = g.in[take:]
		g.size += int64(take)
		if why != notOver {
			g.skipping = why
			g.out = cutEnd
			if n == 0 {
				continue
			}
			return n, nil
		}
		if take == end && len(g.in) > 0 && n < len(p) {
			// The line ends here, within bounds: its newline too, unless
			// it is not admitted.
			g.in = g.in[1:]
			if g.admit != nil && !g.admit(&g.scan) {
				g.out = cutEnd
			} else {
				p[n] = '\n'
				n++
			}
			g.nextLine()
		}
		return n, nil
	}
}

func (g *lineGuard) nextLine() {
	g.size = 0
	g.skipping = notOver
	g.scan.reset()
}

// refusedCode is the JSON-RPC error code of a refusal: one of the range
// for implementations that mcp-go gives no meaning (its message is kept).
const refusedCode = -32099

// refusals is how a connection's guard fails the call a refused message
// answers: with an error response whose message is the connection's
// nonce and the reason. A server never sees the nonce, so it cannot forge
// one; why turns the error back into the reason.
type refusals struct{ nonce string }

func newRefusals() refusals {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return refusals{nonce: "toolscript-refused-" + hex.EncodeToString(b[:])}
}

// line is the error response to the call of id (raw JSON, from the
// refused message) for why, nil when id answers no call (not a number or
// a string).
func (r refusals) line(id []byte, why overKind) []byte {
	if len(id) == 0 || !json.Valid(id) || (id[0] != '"' && id[0] != '-' && (id[0] < '0' || id[0] > '9')) {
		return nil
	}
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":%d,"message":"%s %d"}}`+"\n",
		id, refusedCode, r.nonce, why)
}

// why is the reason of err when it is one of r's refusals, else notOver.
func (r refusals) why(err error) overKind {
	if err == nil || r.nonce == "" {
		return notOver
	}
	_, after, ok := strings.Cut(err.Error(), r.nonce+" ")
	if !ok {
		return notOver
	}
	n, _ := strconv.Atoi(strings.TrimSpace(after))
	if k := overKind(n); k > notOver && k <= overBlocks {
		return k
	}
	return notOver
}
