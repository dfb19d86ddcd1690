// Package typecheck type-checks Luau scripts against definitions (a
// .d.luau text, such as the sdk's) with upstream Luau's own type checker:
// the embedded module wasm/check (luau-build/build-check.sh) under wazero,
// in instances of their own that share nothing with the instances scripts
// run in.
//
// A Checker compiles the module only when a check is first asked for (with
// the compilation cache the Luau runtime uses), twice: once without
// wazero's stop checks, to load the definitions, and once with them, to
// check scripts. It loads its definitions once, into an instance of the
// first, and keeps that instance's memory as an image (memimage: on Linux
// a sealed file mapped copy-on-write). Each check runs in a fresh instance
// of the second made from the image (made ahead, between checks, having
// run nothing), which it is the only user of and which is closed
// afterwards: a script leaves nothing any later check sees. Checks run side by side, at most Config.MaxParallelChecks at once,
// in strict mode.
//
// Everything is bounded: the definitions' size (the load is not stopped
// midway: it is the operator's configuration, capped in size), the
// script's size, each instance's memory, the time of each check and how
// long a check waits for the load; loads run one at a time, and
// definitions replaced before their load starts are never loaded. A check
// that cannot finish (a throw inside the checker, which traps, memory run
// out, its time limit, its caller's context) leaves the script unchecked
// (an *UncheckedError); its instance is dropped and no other check is
// affected.
//
// Definitions loaded in parts (LoadParts: the sdk's APIs) do not fail as a
// whole for one part: when the whole text does not load, the parts that
// do not load are found (by halves, at most MaxPartLoads loads, once per
// definitions) and declared loosely, and the rest is checked
// (parts.go).
package typecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/platform/cachedir"
	"github.com/toolscript/toolscript/wasm/check"
)

// Defaults of Config.
const (
	DefaultMaxDefinitionsBytes = 8 << 20
	DefaultMaxSourceBytes      = 1 << 20
	DefaultMaxMemoryBytes      = 512 << 20
	DefaultCheckTimeout        = 10 * time.Second
	DefaultLoadTimeout         = 60 * time.Second
	// MaxDiagnostics is how many diagnostics a check returns at most.
	MaxDiagnostics = 500
)

// Config configures a Checker. Zero values take the defaults.
type Config struct {
	// CacheDir holds wazero's compilation cache, as luau.Config.CacheDir:
	// empty the user cache directory, "off" none.
	CacheDir string
	// CacheWarning is told, once, that the cache cannot be used.
	CacheWarning *cachedir.Warning
	// MaxDefinitionsBytes caps the definitions Load accepts.
	MaxDefinitionsBytes int
	// MaxSourceBytes caps the scripts Check accepts.
	MaxSourceBytes int
	// MaxMemoryBytes caps the linear memory of each checker instance
	// (GitHub's API, loaded, takes about 41 MiB).
	MaxMemoryBytes uint64
	// CheckTimeout bounds one check; LoadTimeout how long a check waits
	// for the definitions to load (the load goes on, for the next check).
	CheckTimeout time.Duration
	LoadTimeout  time.Duration
	// MaxParallelChecks bounds how many checks run at once, each in an
	// instance of its own; a check beyond it waits for one to end. Zero
	// means GOMAXPROCS.
	MaxParallelChecks int
	// Module is the checker module; nil means the embedded check.Binary.
	Module []byte
	// OnLoose, when set, is told of the parts of definitions loaded in
	// parts that were declared loosely because they do not load, once
	// for each definitions' load that declared some (from the load's
	// goroutine).
	OnLoose func([]PartError)
}

func (c Config) withDefaults() Config {
	if c.MaxDefinitionsBytes <= 0 {
		c.MaxDefinitionsBytes = DefaultMaxDefinitionsBytes
	}
	if c.MaxSourceBytes <= 0 {
		c.MaxSourceBytes = DefaultMaxSourceBytes
	}
	if c.MaxMemoryBytes == 0 {
		c.MaxMemoryBytes = DefaultMaxMemoryBytes
	}
	if c.CheckTimeout <= 0 {
		c.CheckTimeout = DefaultCheckTimeout
	}
	if c.LoadTimeout <= 0 {
		c.LoadTimeout = DefaultLoadTimeout
	}
	if c.Module == nil {
		c.Module = check.Binary
	}
	if c.MaxParallelChecks <= 0 {
		c.MaxParallelChecks = runtime.GOMAXPROCS(0)
	}
	return c
}

// Diagnostic is one error the checker found; lines and columns are
// 1-based, the end exclusive.
type Diagnostic struct {
	Line      int `json:"line"`
	Column    int `json:"column"`
	EndLine   int `json:"end_line"`
	EndColumn int `json:"end_column"`
	// Code is Luau's error code; Category names the kind of error the
	// shim tells apart (unknown_property, missing_properties,
	// type_mismatch, count_mismatch, unknown_symbol,
	// optional_value_access, syntax, ...; "other" for the rest).
	Code     int    `json:"code"`
	Category string `json:"category"`
	Message  string `json:"message"`
}

// ErrUnchecked is what an *UncheckedError is (errors.Is).
var ErrUnchecked = errors.New("script unchecked")

// UncheckedError says that a check could not finish: the script is
// neither accepted nor rejected.
type UncheckedError struct {
	// Reason says why, in words.
	Reason string
	Err    error
}

func (e *UncheckedError) Error() string {
	if e.Err != nil {
		// wazero's errors carry the wasm stack trace on the lines after.
		first, _, _ := strings.Cut(e.Err.Error(), "\n")
		return fmt.Sprintf("type check: script unchecked: %s: %s", e.Reason, first)
	}
	return "type check: script unchecked: " + e.Reason
}

func (e *UncheckedError) Unwrap() []error { return []error{ErrUnchecked, e.Err} }

// ErrDefinitions is what an error about the definitions themselves is
// (errors.Is): too large, or not loadable.
var ErrDefinitions = errors.New("type definitions")

// Checker checks scripts against one set of definitions. Its methods are
// safe to call concurrently; checks run side by side, each in a fresh
// instance made from the image of the loaded definitions.
type Checker struct {
	cfg Config
	// slots holds a token for each check running (MaxParallelChecks).
	slots chan struct{}
	// running counts the checks and loads in progress, for Close.
	running sync.WaitGroup
	// loading holds a token while definitions load: one load at a time,
	// whatever changes the definitions meanwhile.
	loading chan struct{}
	// beforeCheck, when set (tests), is called with each check's instance
	// before the script is written into it; beforeLoad in each load.
	beforeCheck func(api.Module)
	beforeLoad  func()

	compileMu sync.Mutex
	modules   *modules

	mu          sync.Mutex
	definitions Parts
	// current makes or holds the image of definitions; nil until a check
	// asks for it.
	current *imageJob
	closed  bool
}

// New returns a Checker; it compiles nothing until a check is asked for.
func New(ctx context.Context, cfg Config) (*Checker, error) {
	cfg = cfg.withDefaults()
	if pages := (cfg.MaxMemoryBytes + 65535) / 65536; pages > 65536 {
		return nil, fmt.Errorf("typecheck: memory limit %d bytes exceeds the 4 GiB a wasm32 module can address", cfg.MaxMemoryBytes)
	}
	return &Checker{cfg: cfg, slots: make(chan struct{}, cfg.MaxParallelChecks), loading: make(chan struct{}, 1)}, nil
}

// Load sets the definitions (a .d.luau text) later checks run against.
// Definitions over Config.MaxDefinitionsBytes are refused. They are loaded
// into the checker at the next check, whose error says when they do not
// load.
func (c *Checker) Load(definitions []byte) error {
	return c.LoadParts(Parts{Text: definitions})
}

// LoadParts sets definitions made of parts, as Load does. Their whole
// text over Config.MaxDefinitionsBytes is refused only when they have no
// parts; otherwise the load declares loosely the parts that do not load
// (over the cap, refused by the checker or failing inside it).
func (c *Checker) LoadParts(definitions Parts) error {
	if len(definitions.Text) > c.cfg.MaxDefinitionsBytes && len(definitions.Names) == 0 {
		return c.overCap(definitions.Text)
	}
	definitions.Text = bytes.Clone(definitions.Text)
	definitions.Names = slices.Clone(definitions.Names)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.definitions = definitions
	c.dropCurrentLocked()
	return nil
}

// overCap is the error of definitions over Config.MaxDefinitionsBytes.
func (c *Checker) overCap(text []byte) error {
	return fmt.Errorf("%w: %d bytes is over the limit of %d bytes", ErrDefinitions, len(text), c.cfg.MaxDefinitionsBytes)
}

// ErrClosed is the error of a check asked of a closed Checker.
var ErrClosed = errors.New("typecheck: the checker is closed")

// Check type-checks source (strict mode) against the definitions and
// returns what the checker found, at most MaxDiagnostics. An
// *UncheckedError says that the check could not finish.
func (c *Checker) Check(ctx context.Context, source string) ([]Diagnostic, error) {
	diags, _, err := c.CheckLoose(ctx, source)
	return diags, err
}

// CheckLoose is Check, and also returns the parts of the definitions the
// script was checked against that are declared loosely because they do
// not load (LoadParts): the script's uses of them are unchecked.
func (c *Checker) CheckLoose(ctx context.Context, source string) ([]Diagnostic, []PartError, error) {
	if len(source) > c.cfg.MaxSourceBytes {
		return nil, nil, &UncheckedError{Reason: fmt.Sprintf("the script's %d bytes are over the checker's limit of %d bytes", len(source), c.cfg.MaxSourceBytes)}
	}
	job, err := c.loadedImage(ctx)
	if err != nil {
		return nil, nil, err
	}
	defer c.release(job)
	if ctx.Err() == nil {
		select {
		case c.slots <- struct{}{}:
			defer func() { <-c.slots }()
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, &UncheckedError{Reason: "waiting for the checker was stopped", Err: err}
	}
	diags, err := c.checkIn(ctx, job, source)
	if err != nil {
		return nil, nil, err
	}
	return diags, job.loose, nil
}

// Close waits for the checks and the load in progress and releases the
// image and the compiled modules.
func (c *Checker) Close(ctx context.Context) error {
	c.mu.Lock()
	c.closed = true
	c.dropCurrentLocked()
	c.mu.Unlock()
	c.running.Wait()
	c.compileMu.Lock()
	defer c.compileMu.Unlock()
	if c.modules == nil {
		return nil
	}
	err := c.modules.close(ctx)
	c.modules = nil
	return err
}

// maxSuperseded is how many times a check waits for newer definitions
// when those it waited for were replaced before they loaded.
const maxSuperseded = 3

// loadedImage returns the job holding the image of the current
// definitions once it is made, with a reference for the caller
// (release). When the definitions it waits for are replaced before they
// load, it waits for the newer ones, a few times.
func (c *Checker) loadedImage(ctx context.Context) (*imageJob, error) {
	timer := time.NewTimer(c.cfg.LoadTimeout) // for all the tries
	defer timer.Stop()
	for tries := 1; ; tries++ {
		job, err := c.acquireImage()
		if err != nil {
			return nil, err
		}
		err = c.waitForImage(ctx, job, timer.C)
		if err == nil {
			return job, nil
		}
		c.release(job)
		if !errors.Is(err, errSuperseded) || tries == maxSuperseded {
			return nil, err
		}
	}
}

// dropCurrentLocked drops the Checker's reference to the current job:
// its definitions are no longer the Checker's, and are not loaded if
// their load has not started.
func (c *Checker) dropCurrentLocked() {
	if c.current == nil {
		return
	}
	close(c.current.superseded)
	c.releaseLocked(c.current)
	c.current = nil
}

// acquireImage returns the job making or holding the image of the current
// definitions, starting it if there is none, with a reference for the
// caller (release).
func (c *Checker) acquireImage() (*imageJob, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, ErrClosed
	}
	if c.current == nil {
		// One reference while it is current, one for the load.
		c.current = &imageJob{done: make(chan struct{}), superseded: make(chan struct{}), refs: 2}
		c.running.Add(1)
		go c.makeImage(c.current, c.definitions)
	}
	c.current.refs++
	c.running.Add(1)
	return c.current, nil
}

// retain takes another reference to job, for work that goes on after
// the check that holds one returns.
func (c *Checker) retain(job *imageJob) {
	c.mu.Lock()
	job.refs++
	c.running.Add(1)
	c.mu.Unlock()
}

// release drops a reference to job; the last one closes its image.
func (c *Checker) release(job *imageJob) {
	c.mu.Lock()
	c.releaseLocked(job)
	c.mu.Unlock()
	c.running.Done()
}

func (c *Checker) releaseLocked(job *imageJob) {
	job.refs--
	if job.refs == 0 && job.img != nil {
		job.img.close()
	}
}

// waitForImage waits until job is done, until timeUp (the load's time
// limit) and while ctx is not done; it returns the job's error.
func (c *Checker) waitForImage(ctx context.Context, job *imageJob, timeUp <-chan time.Time) error {
	select {
	case <-job.done:
		return job.err
	case <-ctx.Done():
		return &UncheckedError{Reason: "waiting for the definitions to load was stopped", Err: ctx.Err()}
	case <-timeUp:
		return &UncheckedError{Reason: fmt.Sprintf("loading the definitions ran over its time limit of %s", c.cfg.LoadTimeout)}
	}
}

func decodeDiagnostics(out callResult) ([]Diagnostic, error) {
	var diags []Diagnostic
	if err := json.Unmarshal(out.text, &diags); err != nil {
		return nil, &UncheckedError{Reason: "the checker's answer is not JSON", Err: err}
	}
	if len(diags) > MaxDiagnostics {
		diags = diags[:MaxDiagnostics]
	}
	return diags, nil
}

func firstMessage(diags []Diagnostic) string {
	if len(diags) == 0 {
		return "the checker names no reason"
	}
	d := diags[0]
	return fmt.Sprintf("line %d: %s (and %d more)", d.Line, d.Message, len(diags)-1)
}
