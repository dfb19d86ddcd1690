package sdk

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/flate"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zlib"
	"github.com/klauspost/compress/zstd"
)

// The host owns a request's Accept-Encoding: it asks for the codings it
// decodes (acceptEncoding), and undoes them before the body is read within
// max_response_bytes and redacted; a script cannot set the header, and a
// body in a coding the host did not ask for is refused. (A body handed on
// still encoded would carry an echoed credential past redaction.)
var acceptEncoding = []string{"gzip, deflate, br, zstd"}

// maxCodings is how many codings one response may stack
// ("Content-Encoding: gzip, br").
const maxCodings = 2

// zstdWindow is the largest zstd window decoded: what HTTP's zstd coding
// allows (8 MiB).
const zstdWindow = 8 << 20

// errWireLimit: an encoded body took more bytes on the wire than its
// decoded form may have, and the framing of any encoder allows.
var errWireLimit = errors.New("the encoded response is larger than max_response_bytes")

// wireCap is how many bytes an encoded body may take on the wire, for
// max_response_bytes max: max, and room for the framing an encoder adds
// to data that does not compress. A body whose decoded form fits never
// reaches it, so that how well a response compressed is never told.
func wireCap(max int64) int64 { return max + max/64 + 64<<10 }

// codings reads a response's Content-Encoding: the codings in the order
// they were applied ("identity" left out); an error names one the host did
// not ask for.
func codings(h http.Header) ([]string, error) {
	values := h.Values("Content-Encoding")
	if len(values) == 0 {
		return nil, nil
	}
	var out []string
	for _, v := range values {
		for c := range strings.SplitSeq(v, ",") {
			c = strings.ToLower(strings.TrimSpace(c))
			switch c {
			case "", "identity":
			case "gzip", "x-gzip", "deflate", "br", "zstd":
				out = append(out, c)
			default:
				if len(c) > 40 {
					c = c[:40] + "..."
				}
				return nil, fmt.Errorf("the response's Content-Encoding %q is not one the host asked for (%s)", c, acceptEncoding[0])
			}
		}
	}
	if len(out) > maxCodings {
		return nil, fmt.Errorf("the response's Content-Encoding stacks %d codings (at most %d)", len(out), maxCodings)
	}
	return out, nil
}

// decoded is body with codings undone (the last applied first), its bytes
// on the wire counted against wireCap(max); close releases the decoders.
// Decoding is streamed: the caller reads what it wants, the decoders keep
// only their windows, of which windows is the memory the brotli ones may
// take (the stream's header says how much, up to 16 MiB, and four bytes
// make the decoder allocate it; zstd's is refused past max, gzip's and
// deflate's are 32 KiB).
func decoded(body io.Reader, codings []string, max int64) (r io.Reader, windows int64, close func(), err error) {
	r = &capped{r: body, left: wireCap(max)}
	var closers []func()
	close = func() {
		for _, c := range closers {
			c()
		}
	}
	for i := len(codings) - 1; i >= 0; i-- {
		buf := bufio.NewReaderSize(r, 512)
		head, err := buf.Peek(2)
		if len(head) == 0 {
			if err == io.EOF || err == nil {
				return eof{}, windows, close, nil // an empty body: nothing to decode
			}
			close()
			return nil, 0, nil, err
		}
		switch codings[i] {
		case "gzip", "x-gzip":
			z, err := gzip.NewReader(buf)
			if err != nil {
				close()
				return nil, 0, nil, fmt.Errorf("gzip: %w", err)
			}
			closers = append(closers, func() { z.Close() })
			r = z
		case "deflate":
			// HTTP's deflate is zlib's format; some servers send raw
			// deflate.
			if len(head) == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
				z, err := zlib.NewReader(buf)
				if err != nil {
					close()
					return nil, 0, nil, fmt.Errorf("deflate: %w", err)
				}
				closers = append(closers, func() { z.Close() })
				r = z
			} else {
				z := flate.NewReader(buf)
				closers = append(closers, func() { z.Close() })
				r = z
			}
		case "br":
			windows += brotliWindow(head[0])
			r = brotli.NewReader(buf)
		case "zstd":
			z, err := zstd.NewReader(buf, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
				zstd.WithDecoderMaxWindow(zstdWindow), zstd.WithDecoderMaxMemory(uint64(max)+1))
			if err != nil {
				close()
				return nil, 0, nil, fmt.Errorf("zstd: %w", err)
			}
			closers = append(closers, z.Close)
			r = z
		}
	}
	return r, windows, close, nil
}

// brotliWindow is the window a brotli stream whose first byte is b
// declares (RFC 7932, 9.1: WBITS in its first 1, 4 or 7 bits): what its
// decoder may allocate. A large window (an extension the decoder refuses)
// counts as the largest window.
func brotliWindow(b byte) int64 {
	bits := 16
	switch n, m := b>>1&7, b>>4&7; {
	case b&1 == 0:
	case n != 0:
		bits = 17 + int(n)
	case m == 0:
		bits = 17
	case m == 1: // large window
		bits = 24
	default:
		bits = 8 + int(m)
	}
	return 1 << bits
}

// capped reads at most left bytes of r, then fails with errWireLimit.
type capped struct {
	r    io.Reader
	left int64
}

func (c *capped) Read(p []byte) (int, error) {
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return 0, errWireLimit
	}
	return n, err
}

type eof struct{}

func (eof) Read([]byte) (int, error) { return 0, io.EOF }
