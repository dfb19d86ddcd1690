package mcpserver

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"strings"
	"text/template"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/host/runtime/sandboxio"
)

// The tool description, the server instructions and the resources are
// templates filled with the server's configuration, so that they state the
// limits in force and leave io out when it is disabled.
//
//go:embed docs/*.md
var docFiles embed.FS

var docTemplates = template.Must(template.New("").ParseFS(docFiles, "docs/*.md"))

// docData is what the templates see.
type docData struct {
	IO bool
	// SDK is set when scripts have an sdk (APIs or MCP servers).
	SDK              bool
	Timeout          string
	MaxTimeout       string
	HeapMB           uint64
	ResultBytes      string
	LogLines         int
	LogBytes         string
	MaxScript        string
	WriteBudget      string
	MaxHandles       int
	MaxFiles         int
	OutputBytes      string
	MaxDepth         int
	ProgressInterval string
	// MaxInline is the most characters of a result answered inline.
	MaxInline int
	// Kinds are the error kinds, from result.Kinds.
	Kinds []result.Kind
}

func (s *Server) docData() docData {
	l := s.cfg.Limits
	d := docData{
		IO:               s.cfg.IO != nil,
		SDK:              s.cfg.SDKDocs != nil,
		Timeout:          duration(l.Timeout),
		MaxTimeout:       duration(s.cfg.MaxTimeout),
		HeapMB:           l.HeapBytes >> 20,
		ResultBytes:      size(int64(l.MaxResultBytes)),
		LogLines:         l.MaxLogLines,
		LogBytes:         size(int64(l.MaxLogBytes)),
		MaxScript:        size(s.cfg.MaxScriptBytes),
		MaxHandles:       sandboxio.MaxHandles,
		OutputBytes:      size(int64(l.MaxOutputBytes)),
		MaxDepth:         luau.MaxNestingDepth,
		ProgressInterval: duration(s.cfg.ProgressInterval),
		MaxInline:        s.cfg.LargeResults.MaxInline,
		Kinds:            result.Kinds,
	}
	if s.cfg.IO != nil {
		d.WriteBudget = size(s.cfg.IO.MaxBytes)
		d.MaxFiles = s.cfg.IO.MaxFiles
		if d.MaxFiles == 0 {
			d.MaxFiles = sandboxio.DefaultMaxFiles
		}
	}
	return d
}

// render fills in one template. The templates are part of the binary and
// tested, so a failure is a programming error.
func (s *Server) render(name string) string {
	var b bytes.Buffer
	if err := docTemplates.ExecuteTemplate(&b, name, s.docData()); err != nil {
		panic(fmt.Sprintf("mcpserver: template %s: %v", name, err))
	}
	return strings.TrimSpace(b.String())
}

func (s *Server) instructions() string { return s.render("instructions.md") }

// doc is one documentation resource.
type doc struct {
	uri, name, title, description string
	text                          string
}

// docURIPrefix begins the URI of every documentation resource.
const docURIPrefix = "toolscript://docs/"

// docs returns the documentation resources for this configuration: the
// Luau overview and one page per built-in function, io's only when io is on.
func (s *Server) docs() []doc {
	pages := []struct {
		name, description string
		io                bool
	}{
		{"luau", "Overview of Luau in toolscript: the language, the globals, the limits, the result", false},
		{"print", "print(...: any): () — adds a line to the result's logs", false},
		{"json.encode", "json.encode(value: any): string — Luau values to JSON; json.null and json.object", false},
		{"json.decode", "json.decode(text: string): any — JSON to Luau values", false},
		{"progress", "progress(done: number, total: number?, message: string?): () — progress notifications", false},
		{"parallel", "parallel(fns: {() -> any}, limit: number?): {any} — concurrent sdk calls", false},
		{"io.open", "io.open(path: string, mode: string?): File — open a file in the io directory; the File methods", true},
		{"io.lines", "io.lines(path: string): () -> string? — iterate over the lines of a file", true},
		{"io.list", "io.list(path: string?): {string} — the entries of a directory", true},
		{"io.type", "io.type(value: any): (\"file\" | \"closed file\")? — is this a file", true},
		{"io.stat", "io.stat(path: string) — the kind, size and modification time of a file, directory or link", true},
		{"io.glob", "io.glob(pattern: string): {string} — the paths that match a glob, ** included", true},
		{"io.grep", "io.grep(pattern: string, path: string?, options?) — the lines that match a regular expression", true},
		{"io.edit", "io.edit(path: string, old: string, new: string, all: boolean?): number — replace text in a file", true},
		{"os.remove", "os.remove(path: string): boolean — delete a file", true},
		{"os.rename", "os.rename(from: string, to: string): boolean — move or rename a file", true},
	}
	var docs []doc
	for _, p := range pages {
		if p.io && s.cfg.IO == nil {
			continue
		}
		title := p.name
		if p.name == "luau" {
			title = "Luau in toolscript"
		}
		docs = append(docs, doc{
			uri:         docURIPrefix + p.name,
			name:        p.name,
			title:       title,
			description: p.description,
			text:        s.render(p.name + ".md"),
		})
	}
	return docs
}

func (d doc) resource() mcp.Resource {
	return mcp.NewResource(d.uri, d.name,
		mcp.WithResourceTitle(d.title),
		mcp.WithResourceDescription(d.description),
		mcp.WithMIMEType("text/markdown"),
		mcp.WithResourceSize(int64(len(d.text))),
	)
}

func (d doc) read(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
	return []mcp.ResourceContents{mcp.TextResourceContents{URI: d.uri, MIMEType: "text/markdown", Text: d.text}}, nil
}

// duration writes d for people: "30s", "5 min", "1.5s".
func duration(d time.Duration) string {
	switch {
	case d >= time.Minute && d%time.Minute == 0:
		return fmt.Sprintf("%d min", d/time.Minute)
	case d >= time.Second && d%time.Second == 0:
		return fmt.Sprintf("%ds", d/time.Second)
	}
	return d.String()
}

// size writes n bytes for people: "1 MiB", "64 KiB", "1000 bytes".
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
