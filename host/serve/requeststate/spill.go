package requeststate

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// spillSkew is how long after its state's expiry a spilled prefix stays:
// replicas' clocks may differ by this much, and a state is refused by the
// clock of the replica that opens it.
const spillSkew = 5 * time.Minute

// A spilled prefix's file is named
// paused-<user's hash>-<expiry, Unix seconds>-<state id>.trace.zst, so
// that the directory's bounds and pruning need only its listing.
const (
	spillPrefix = "paused-"
	spillSuffix = ".trace.zst"
)

// spillName is the name of st's spilled prefix.
func spillName(st *State) string {
	return spillPrefix + userHash(st.Binding.User) + "-" + strconv.FormatInt(st.Expiry.Unix(), 10) + "-" + st.ID + spillSuffix
}

// userHash names user in a spill file's name, without showing who it is.
func userHash(user string) string {
	sum := sha256.Sum256([]byte(user))
	return hex.EncodeToString(sum[:8])
}

// parseSpillName is the user's hash and the expiry in a spill file's
// name; ok is false for a name spillName did not make.
func parseSpillName(name string) (user string, expiry time.Time, ok bool) {
	rest, found := strings.CutPrefix(name, spillPrefix)
	if !found {
		return "", time.Time{}, false
	}
	if rest, found = strings.CutSuffix(rest, spillSuffix); !found {
		return "", time.Time{}, false
	}
	parts := strings.Split(rest, "-")
	if len(parts) != 3 {
		return "", time.Time{}, false
	}
	unix, err := strconv.ParseInt(parts[1], 10, 64)
	if err != nil {
		return "", time.Time{}, false
	}
	return parts[0], time.Unix(unix, 0), true
}

// spillUsage is the bytes of the spilled prefixes in a directory, in
// all and by user's hash.
type spillUsage struct {
	total  int64
	byUser map[string]int64
}

// pruneSpills removes the spilled prefixes in dir whose states expired
// (spillSkew before now) and returns what the others hold. Files spillName
// did not make are left alone and not counted.
func pruneSpills(dir string, now time.Time) (spillUsage, error) {
	usage := spillUsage{byUser: map[string]int64{}}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return usage, fmt.Errorf("requeststate: reading the spill directory: %w", err)
	}
	for _, e := range entries {
		user, expiry, ok := parseSpillName(e.Name())
		if !ok || !e.Type().IsRegular() {
			continue
		}
		if expiry.Add(spillSkew).Before(now) {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
				return usage, fmt.Errorf("requeststate: removing an expired state's prefix: %w", err)
			}
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile, by a replica sharing dir
		}
		usage.total += info.Size()
		usage.byUser[user] += info.Size()
	}
	return usage, nil
}

// spill writes st's compressed prefix to the spill directory, within its
// bounds, having pruned the prefixes of expired states, and returns what
// the state names it by.
func (s *Sealer) spill(st *State, compressed []byte, now time.Time) (*Spill, error) {
	size := int64(len(compressed))
	if s.spillDir == "" {
		return nil, fmt.Errorf("requeststate: the paused execution's prefix is %s compressed, more than a requestState holds (%s), "+
			"and no [effects] state_dir keeps it", trace.Size(size), trace.Size(MaxSealedBytes))
	}
	if size > MaxSpillBytes {
		return nil, fmt.Errorf("requeststate: the paused execution's prefix is %s compressed, more than %s", trace.Size(size), trace.Size(MaxSpillBytes))
	}
	usage, err := pruneSpills(s.spillDir, now)
	if err != nil {
		return nil, err
	}
	if own := usage.byUser[userHash(st.Binding.User)]; own+size > MaxSpillUserBytes {
		return nil, fmt.Errorf("requeststate: the [effects] state_dir holds %s of this user's paused executions' prefixes; with this one's %s they would pass %s",
			trace.Size(own), trace.Size(size), trace.Size(MaxSpillUserBytes))
	}
	if usage.total+size > MaxSpillDirBytes {
		return nil, fmt.Errorf("requeststate: the [effects] state_dir holds %s of paused executions' prefixes; with this one's %s they would pass %s",
			trace.Size(usage.total), trace.Size(size), trace.Size(MaxSpillDirBytes))
	}
	name := spillName(st)
	f, err := os.OpenFile(filepath.Join(s.spillDir, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("requeststate: keeping the prefix: %w", err)
	}
	if _, err := f.Write(compressed); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("requeststate: keeping the prefix: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return nil, fmt.Errorf("requeststate: keeping the prefix: %w", err)
	}
	sum := sha256.Sum256(compressed)
	return &Spill{Name: name, SHA256: hex.EncodeToString(sum[:]), Bytes: size}, nil
}

func readSpill(dir string, sp *Spill) ([]byte, error) {
	if dir == "" || filepath.Base(sp.Name) != sp.Name || sp.Bytes > MaxSpillBytes {
		return nil, fmt.Errorf("%w: no [effects] state_dir holds %s", ErrPrefixMissing, sp.Name)
	}
	f, err := os.Open(filepath.Join(dir, sp.Name))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrefixMissing, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, sp.Bytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrPrefixMissing, err)
	}
	sum := sha256.Sum256(data)
	if int64(len(data)) != sp.Bytes || hex.EncodeToString(sum[:]) != sp.SHA256 {
		return nil, fmt.Errorf("%w: %s is not the file the pause wrote", ErrPrefixMissing, sp.Name)
	}
	return data, nil
}

// RemoveSpill removes a spent state's spilled prefix, if it has one: no
// retry reads it again.
func (st *State) RemoveSpill() error {
	if st.Spill == nil || st.spillDir == "" || filepath.Base(st.Spill.Name) != st.Spill.Name {
		return nil
	}
	if err := os.Remove(filepath.Join(st.spillDir, st.Spill.Name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("requeststate: removing a resumed state's prefix: %w", err)
	}
	return nil
}
