package app

import (
	"bytes"
	"context"
	"fmt"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/host/sdk/upstream"
)

// Under serve the upstream MCP servers start in the background (initialize
// is answered at once): a server's tools join the sdk when it is ready,
// and a script that names a server whose tools are not listed yet waits
// for it, within its own timeout, before it runs; the others run at once.

// publishedSDK is an sdk the runtime's table and the docs are made from.
type publishedSDK struct {
	client *sdk.Client
	next   chan struct{}
}

// publish records that the runtime and the docs have client now.
func (a *assembly) publish(client *sdk.Client) {
	old := a.published.Swap(&publishedSDK{client: client, next: make(chan struct{})})
	close(old.next)
}

// clientFor is the sdk a script gets: once every upstream server it
// names is listed in the runtime's sdk table (waiting for them within the
// script's timeout), the current one.
func (a *assembly) clientFor(ctx context.Context, script *luau.Script) (*sdk.Client, error) {
	wctx, cancel := context.WithTimeout(ctx, script.Limits.Timeout)
	defer cancel()
	pending := func(cat *catalog.Catalog) []string { return pendingUpstreams(cat, script.Source) }
	if names, err := a.awaitPublished(wctx, pending, true); err != nil {
		return nil, upstreamNotReady(wctx, names[0], script.Limits.Timeout, err)
	}
	// current is at least as new as the published sdk: it is replaced
	// before the runtime's table.
	return a.current.Load(), nil
}

// MaxDocsWait bounds how long the docs tools and the sdk:// resources
// wait for upstream MCP servers that are starting: their start timeout,
// at most this.
const MaxDocsWait = 10 * time.Second

// awaitDocs waits, before a docs tool or an sdk:// resource answers,
// until no upstream MCP server of the published sdk is starting (the docs
// have its tools by then, or say it is down), within MaxDocsWait or until
// ctx ends. A server that is down is not waited for: the docs say so.
func (a *assembly) awaitDocs(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, min(upstream.StartTimeout, MaxDocsWait))
	defer cancel()
	_, _ = a.awaitPublished(wctx, startingUpstreams, false)
}

// awaitPublished waits until pending names no server in the published
// sdk's catalog, looking again each time another sdk is published (the
// runtime's table and the docs have it by then). With start it also waits
// for each server named (sdk.Client.WaitUpstream: one that is down is
// started again) and fails with its error. When ctx ends first it returns
// the servers still pending and ctx's error.
func (a *assembly) awaitPublished(ctx context.Context, pending func(*catalog.Catalog) []string, start bool) ([]string, error) {
	for {
		p := a.published.Load()
		names := pending(p.client.Catalog())
		if len(names) == 0 {
			return nil, nil
		}
		if start {
			for _, name := range names {
				if err := p.client.WaitUpstream(ctx, name); err != nil {
					return []string{name}, err
				}
			}
		}
		select {
		case <-p.next:
		case <-ctx.Done():
			return names, ctx.Err()
		}
	}
}

func upstreamNotReady(ctx context.Context, name string, timeout time.Duration, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("the script names sdk.%s, and the MCP server %s was not ready within the script's timeout (%s)", name, name, timeout)
	}
	return fmt.Errorf("the script names sdk.%s, and the MCP server %s could not be started: %w", name, name, err)
}

// pendingUpstreams are the MCP servers of cat whose tools are not listed
// yet and whose name source has as a word: a script that may call them.
func pendingUpstreams(cat *catalog.Catalog, source []byte) []string {
	var out []string
	for _, api := range cat.APIs {
		if api.Kind == catalog.MCP && api.State != "" && hasWord(source, api.Name) {
			out = append(out, api.Name)
		}
	}
	return out
}

// startingUpstreams are the MCP servers of cat whose first start is in
// progress.
func startingUpstreams(cat *catalog.Catalog) []string {
	var out []string
	for _, api := range cat.APIs {
		if api.Kind == catalog.MCP && api.State == upstream.StateStarting {
			out = append(out, api.Name)
		}
	}
	return out
}

// hasWord reports whether word occurs in s with no identifier character
// on either side.
func hasWord(s []byte, word string) bool {
	w := []byte(word)
	if len(w) == 0 {
		return false
	}
	for i := 0; ; {
		j := bytes.Index(s[i:], w)
		if j < 0 {
			return false
		}
		j += i
		end := j + len(w)
		if (j == 0 || !identChar(s[j-1])) && (end == len(s) || !identChar(s[end])) {
			return true
		}
		i = j + 1
	}
}

func identChar(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}
