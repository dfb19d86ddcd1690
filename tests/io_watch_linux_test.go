//go:build linux

package tests

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// watcher reports, through inotify, every access to a directory tree:
// opening, reading, writing, creating, deleting or changing anything in it.
// Stat calls are not reported (inotify does not see them); everything that
// reads or changes data is.
type watcher struct {
	fd    int
	paths map[int]string
}

const watchedEvents = unix.IN_ACCESS | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_OPEN | unix.IN_CLOSE_WRITE |
	unix.IN_CREATE | unix.IN_DELETE | unix.IN_DELETE_SELF | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MOVE_SELF

func watchTree(t *testing.T, root string) *watcher {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	w := &watcher{fd: fd, paths: map[int]string{}}
	t.Cleanup(func() { unix.Close(fd) })
	// List the directories first: walking them once watched would be seen.
	var dirs []string
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	if err != nil {
		t.Fatalf("listing %s: %v", root, err)
	}
	for _, p := range dirs {
		wd, err := unix.InotifyAddWatch(fd, p, watchedEvents)
		if err != nil {
			t.Fatalf("watching %s: %v", p, err)
		}
		w.paths[wd] = p
	}
	return w
}

// events returns the accesses seen so far.
func (w *watcher) events() []string {
	var out []string
	buf := make([]byte, 64<<10)
	for {
		n, err := unix.Read(w.fd, buf)
		if n <= 0 || err != nil {
			return out
		}
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			name := ""
			if ev.Len > 0 {
				raw := buf[off+unix.SizeofInotifyEvent : off+unix.SizeofInotifyEvent+int(ev.Len)]
				for i, b := range raw {
					if b == 0 {
						raw = raw[:i]
						break
					}
				}
				name = string(raw)
			}
			out = append(out, fmt.Sprintf("%s/%s: mask %#x", w.paths[int(ev.Wd)], name, ev.Mask))
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}
