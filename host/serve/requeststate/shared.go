package requeststate

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// A Spent's memory is its process's own. Replicas behind a load balancer
// share it through a directory ([effects] state_dir, on a volume every
// replica mounts): resuming a state creates a file named by its id there,
// with O_EXCL, which one replica wins; the others find the file and
// refuse the state. The file holds the state's expiry; files past it are
// swept now and then.

// sweepEvery is how many spends pass between two sweeps of the shared
// directory; maxSweep bounds the files one sweep reads.
const (
	sweepEvery = 256
	maxSweep   = 10000
)

// NewSharedSpent is NewSpent whose memory is also dir, a directory the
// replicas share: a state resumed by any of them resumes nowhere else.
func NewSharedSpent(max int, dir string) (*Spent, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("requeststate: the shared state directory: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("requeststate: the shared state directory %s is not a directory", dir)
	}
	s := NewSpent(max)
	s.dir = dir
	return s, nil
}

// spendShared marks id spent in the shared directory. s.mu is held.
func (s *Spent) spendShared(id string, expiry, now time.Time) error {
	if _, err := hex.DecodeString(id); err != nil || id == "" || len(id) > 64 {
		return fmt.Errorf("%w: a state id is hex", ErrMalformed)
	}
	if s.spends++; s.spends%sweepEvery == 0 {
		s.sweep(now)
	}
	path := filepath.Join(s.dir, id)
	for range 2 {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if err == nil {
			_, werr := f.WriteString(strconv.FormatInt(expiry.Unix(), 10))
			if err := errors.Join(werr, f.Close()); err != nil {
				return fmt.Errorf("requeststate: recording a resumed state in %s: %w", s.dir, err)
			}
			return nil
		}
		if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("requeststate: recording a resumed state in %s: %w", s.dir, err)
		}
		if exp, ok := readExpiry(path); ok && now.Before(exp) {
			return fmt.Errorf("%w (by a replica sharing %s): a state resumes once; call execute_script again to run the script anew", ErrSpent, s.dir)
		}
		os.Remove(path) // a file past its expiry: its state is expired too
	}
	return fmt.Errorf("%w: its record in %s could not be replaced", ErrSpent, s.dir)
}

// readExpiry reads the expiry a shared file holds (a few digits: it
// reads no more than 33 bytes of any other file).
func readExpiry(path string) (time.Time, bool) {
	f, err := os.Open(path)
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 33))
	if err != nil || len(b) > 32 {
		return time.Time{}, false
	}
	sec, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(sec, 0), true
}

// sweep removes the shared files past their expiry, reading at most
// maxSweep of them.
func (s *Spent) sweep(now time.Time) {
	d, err := os.Open(s.dir)
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(maxSweep)
	for _, name := range names {
		if _, err := hex.DecodeString(name); err != nil {
			continue // not a record of a resumed state: a kept prefix, say
		}
		path := filepath.Join(s.dir, name)
		if exp, ok := readExpiry(path); ok && !now.Before(exp) {
			os.Remove(path)
		}
	}
}
