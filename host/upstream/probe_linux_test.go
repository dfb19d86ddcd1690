package upstream

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

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
