package typecheck

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Parts are definitions made of named parts (the sdk's APIs), any of
// which their Loose text can declare loosely (typed any: its uses
// unchecked). One part that does not load (an upstream server's schemas
// are not the operator's) then leaves its own uses unchecked, not every
// script.
type Parts struct {
	// Text is the definitions, every part declared.
	Text []byte
	// Names name the parts; none: the definitions are one whole.
	Names []string
	// Loose is the definitions with the parts named declared loosely. It
	// is called only when Text does not load, from the load's goroutine.
	Loose func(names []string) []byte
}

// MaxPartLoads bounds the loads that look for the parts of definitions
// that do not load (each up to Config.MaxMemoryBytes, one at a time): a
// part that fails among 256 takes 16. The parts not yet tried when it is
// reached are declared loosely too.
const MaxPartLoads = 16

// PartError is a part of the definitions declared loosely because it
// does not load.
type PartError struct {
	// Part is the part's name; Err why it does not load.
	Part string
	Err  error
}

func (e PartError) Error() string {
	return fmt.Sprintf("the definitions of %s do not load: %s", e.Part, e.Reason())
}

// Reason is why the part does not load, in one line (wazero's errors
// carry the wasm stack trace on the lines after).
func (e PartError) Reason() string {
	first, _, _ := strings.Cut(e.Err.Error(), "\n")
	return first
}

func (e PartError) Unwrap() error { return e.Err }

// loadError is an error of the definitions' load itself, not of starting
// the checker: the definitions are at fault, and some of their parts may
// load without the others.
type loadError struct{ err error }

func (e *loadError) Error() string { return e.err.Error() }
func (e *loadError) Unwrap() error { return e.err }

// errUntried is the error of the parts declared loosely untried, the
// search having reached MaxPartLoads.
var errUntried = fmt.Errorf("%w: not tried: the search for the definitions that do not load stopped after %d loads", ErrDefinitions, MaxPartLoads)

// loadParts loads definitions into an image. When their whole text does
// not load, the parts that do not load are found (partSearch) and the
// others loaded with them declared loosely, which loose lists. Superseded
// definitions stop the search.
func (c *Checker) loadParts(ctx context.Context, m *modules, job *imageJob, definitions Parts) (img *image, loose []PartError, err error) {
	img, err = c.loadText(ctx, m, definitions.Text, true)
	var failed *loadError
	if err == nil || len(definitions.Names) == 0 || definitions.Loose == nil || !errors.As(err, &failed) {
		return img, nil, err
	}
	search := &partSearch{c: c, m: m, job: job, definitions: definitions}
	search.search(ctx, definitions.Names, err)
	switch {
	case search.superseded:
		return nil, nil, errSuperseded
	case search.broken != nil:
		return nil, nil, search.broken
	}
	if len(search.loose) == 0 {
		return nil, nil, err // the parts load apart, not together
	}
	names := make([]string, len(search.loose))
	for i, p := range search.loose {
		names[i] = p.Part
	}
	img, looseErr := c.loadText(ctx, m, definitions.Loose(names), true)
	if looseErr != nil {
		return nil, nil, err
	}
	return img, search.loose, nil
}

// loadText loads text, refused over Config.MaxDefinitionsBytes; keep
// keeps its image.
func (c *Checker) loadText(ctx context.Context, m *modules, text []byte, keep bool) (*image, error) {
	if len(text) > c.cfg.MaxDefinitionsBytes {
		return nil, &loadError{c.overCap(text)}
	}
	if c.beforeLoad != nil {
		c.beforeLoad()
	}
	return m.load(ctx, text, keep)
}

// partSearch finds the parts of definitions that do not load by halves:
// a set of parts that fails with every other part declared loosely is
// split in two, each half tried the same way, down to single parts.
type partSearch struct {
	c           *Checker
	m           *modules
	job         *imageJob
	definitions Parts
	loads       int
	loose       []PartError
	superseded  bool
	// broken is an error not of the definitions (the checker did not
	// start), which ends the search.
	broken error
}

// search looks into parts, which fail together with err.
func (s *partSearch) search(ctx context.Context, parts []string, err error) {
	if len(parts) == 1 {
		s.loose = append(s.loose, PartError{Part: parts[0], Err: err})
		return
	}
	half := len(parts) / 2
	for _, h := range [][]string{parts[:half], parts[half:]} {
		if s.stop(h) {
			continue
		}
		s.loads++
		others := slices.DeleteFunc(slices.Clone(s.definitions.Names), func(n string) bool { return slices.Contains(h, n) })
		_, err := s.c.loadText(ctx, s.m, s.definitions.Loose(others), false)
		var failed *loadError
		switch {
		case err == nil:
		case errors.As(err, &failed):
			s.search(ctx, h, err)
		default:
			s.broken = err
		}
	}
}

// stop says whether the search goes no further than parts: the
// definitions were superseded, or MaxPartLoads were made (parts are then
// declared loosely untried).
func (s *partSearch) stop(parts []string) bool {
	select {
	case <-s.job.superseded:
		s.superseded = true
	default:
	}
	switch {
	case s.superseded || s.broken != nil:
		return true
	case s.loads >= MaxPartLoads:
		for _, p := range parts {
			s.loose = append(s.loose, PartError{Part: p, Err: errUntried})
		}
		return true
	}
	return false
}
