package app

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
)

// ErrNoAPIs is the UsageError of Docs when nothing names an API.
var ErrNoAPIs = errors.New("no APIs: add [apis.NAME] or [mcp_servers.NAME] to the config file, or pass --api NAME=SPEC or --mcp NAME=COMMAND")

// Docs opens the sdk, writes its specs' warnings to warnings (one line
// each, escaped by host/platform/termtext: a spec's names are in them), and returns
// its docs; the upstream servers are stopped again, since the catalog is
// all the docs need. No API at all is a UsageError (ErrNoAPIs).
func Docs(ctx context.Context, file *config.File, opts SDKOptions, warnings io.Writer) (*sdkdocs.Docs, error) {
	client, err := OpenSDK(ctx, file, opts)
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, usage(ErrNoAPIs)
	}
	defer client.Close()
	for _, api := range client.Catalog().APIs {
		for _, w := range api.Warnings {
			fmt.Fprintf(warnings, "toolscript: warning: api %s: %s\n", termtext.Line(api.Name), termtext.Line(w))
		}
	}
	learnedSet := learnedTypes(ctx, file, getenvOf(opts), opts.Learn, warnTo(warnings))
	return sdkdocs.New(client.Catalog()).WithLearned(learnedSet), nil
}
