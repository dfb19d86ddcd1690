package upstream

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/internal/syncbuf"
	"github.com/toolscript/toolscript/internal/testupstreams"
)

func TestCloseKillsProcessGroup(t *testing.T) {
	// npx-like: the server is a child of the started process. Close stops
	// both, and reaps the one it started (Alive counts zombies).
	py := testupstreams.Python(t)
	cfg := Config{Name: "py", Command: "sh", Args: []string{"-c", testupstreams.Shell(py) + "; true"}}
	set := start(t, Options{Stderr: &syncbuf.Buffer{}}, cfg)
	leader := set.byName["py"].conn.proc.proc.Pid
	set.Close()
	if testupstreams.Alive(leader) {
		t.Errorf("process %d is still alive", leader)
	}
	// Nothing of its group is left.
	if err := killGroupProbe(leader); err == nil {
		t.Errorf("process group %d still has members", leader)
	}
}

// killGroupProbe is nil when the process group pgid has a live member
// (zombies waiting for a parent that does not reap them do not count).
func killGroupProbe(pgid int) error {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...
		rest := string(b[strings.LastIndexByte(string(b), ')')+2:])
		f := strings.Fields(rest)
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return nil
		}
	}
	return errors.New("no live member")
}
