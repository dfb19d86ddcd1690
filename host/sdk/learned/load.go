package learned

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/contract/catalog"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// Limits bound what Load reads.
type Limits struct {
	// Files is how many traces are read at most, the newest first.
	Files int
	// Bytes is how many bytes of traces are read at most: a trace larger
	// than what is left is not read.
	Bytes int64
	// LineBytes bounds one line of a trace (one call with its response):
	// a trace with a longer one is skipped.
	LineBytes int64
	// Time bounds the whole reading; past it, what was learned so far is
	// kept.
	Time time.Duration
}

// DefaultLimits are the limits of a load at start-up.
func DefaultLimits() Limits {
	return Limits{Files: 200, Bytes: 32 << 20, LineBytes: 4 << 20, Time: 2 * time.Second}
}

// maxWarnings is how many traces that cannot be read are named; the rest
// are counted.
const maxWarnings = 5

// Result is what was learned of one function.
type Result struct {
	// Schema is the type of what the script got (nil: nothing certain).
	Schema *catalog.Schema
	// Calls is how many successful calls it was learned from.
	Calls int
	// TextJSON is, when every text result was JSON (an object or an
	// array), the type of its json.decode; nil otherwise.
	TextJSON *catalog.Schema
}

// Set is what was learned, by function as a trace names it
// ("sdk.api.function").
type Set map[string]Result

// function is what is being learned of one function.
type function struct {
	results, texts *Learner
	textNotJSON    bool
}

// sample is one successful call's result, as a trace holds it.
type sample struct {
	function string
	json     []byte
	text     []byte
}

// Load learns from the traces at paths: a file is read whatever its name;
// a directory's own files (not its subdirectories: a hosted server's
// users' traces are theirs) whose names end in .jsonl or .trace. The
// newest are read first, within lim. Only calls that succeeded count
// (not a dry run's made-up responses, not a call left unanswered); a
// trace that cannot be read whole is skipped, and warn (when not nil) is
// told why. Load never fails: what could not be read is only not learned.
func Load(ctx context.Context, paths []string, lim Limits, warn func(string)) Set {
	if warn == nil {
		warn = func(string) {}
	}
	ctx, cancel := context.WithTimeout(ctx, lim.Time)
	defer cancel()
	files := traceFiles(paths, warn)
	learning := map[string]*function{}
	left := lim.Bytes
	read, skipped, broken := 0, 0, 0
	for _, f := range files {
		if read >= lim.Files || f.size > left {
			skipped++
			continue
		}
		if ctx.Err() != nil {
			warn(fmt.Sprintf("learning result types: stopped after %s, %d traces read", lim.Time, read))
			break
		}
		left -= f.size
		read++
		samples, err := readTrace(ctx, f.path, f.size, lim.LineBytes)
		if err != nil {
			if broken++; broken <= maxWarnings {
				warn(fmt.Sprintf("learning result types: skipping %s: %v", f.path, err))
			}
			continue
		}
		for _, s := range samples {
			learnFrom(learning, s)
		}
	}
	if broken > maxWarnings {
		warn(fmt.Sprintf("learning result types: %d more traces skipped (they cannot be read)", broken-maxWarnings))
	}
	if skipped > 0 {
		warn(fmt.Sprintf("learning result types: %d older traces not read (at most %d traces, %d bytes)", skipped, lim.Files, lim.Bytes))
	}
	out := Set{}
	for name, fn := range learning {
		r := Result{Schema: fn.results.Schema(), Calls: fn.results.Samples()}
		if fn.texts != nil && !fn.textNotJSON {
			r.TextJSON = fn.texts.Schema()
		}
		out[name] = r
	}
	return out
}

// MaxFunctions bounds how many functions are learned (the first met).
const MaxFunctions = 2000

// learnFrom adds one call's result to what is learned of its function.
func learnFrom(learning map[string]*function, s sample) {
	fn := learning[s.function]
	if fn == nil {
		if len(learning) >= MaxFunctions {
			return
		}
		fn = &function{results: NewLearner()}
		learning[s.function] = fn
	}
	switch {
	case len(s.json) > 0:
		_ = fn.results.AddJSON(s.json) // a value that is not JSON is left out
	case len(s.text) > 0:
		fn.results.AddString()
		if fn.texts == nil {
			fn.texts = NewLearner()
		}
		trimmed := strings.TrimSpace(string(s.text))
		if !strings.HasPrefix(trimmed, "{") && !strings.HasPrefix(trimmed, "[") || fn.texts.AddJSON([]byte(trimmed)) != nil {
			fn.textNotJSON = true
		}
	}
}

// traceFile is a trace to read.
type traceFile struct {
	path     string
	size     int64
	modified time.Time
}

// traceFiles lists the traces at paths, the newest first.
func traceFiles(paths []string, warn func(string)) []traceFile {
	var out []traceFile
	addFile := func(path string, info fs.FileInfo) {
		if info.Mode().IsRegular() {
			out = append(out, traceFile{path: path, size: info.Size(), modified: info.ModTime()})
		}
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			warn(fmt.Sprintf("learning result types: %v", err))
			continue
		}
		if !info.IsDir() {
			addFile(p, info)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			warn(fmt.Sprintf("learning result types: %v", err))
			continue
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".jsonl") && !strings.HasSuffix(e.Name(), ".trace") || !e.Type().IsRegular() {
				continue
			}
			if info, err := e.Info(); err == nil {
				addFile(filepath.Join(p, e.Name()), info)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b traceFile) int { return b.modified.Compare(a.modified) })
	return out
}

// readTrace reads one trace whole (at most size bytes, lines of at most
// lineBytes) and returns its successful calls' results.
func readTrace(ctx context.Context, path string, size, lineBytes int64) ([]sample, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, _, err := trace.NewReader(io.LimitReader(f, size), lineBytes)
	if err != nil {
		return nil, err
	}
	var out []sample
	for {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("out of time: %w", err)
		}
		e, err := r.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if e.Op != trace.OpCall {
			continue
		}
		resp := e.Response
		if resp.Fail != 0 || resp.DryRun || resp.Unanswered {
			continue
		}
		out = append(out, sample{function: e.Function, json: resp.JSON, text: resp.Text})
	}
}
