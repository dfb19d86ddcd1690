package luau_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/toolscript/toolscript/host/platform/cachedir"
	"github.com/toolscript/toolscript/host/runtime/luau"
)

// nobody is the user another user's files are given to (tests run as root).
const nobody = 65534

// warnings collects what a cachedir.Warning tells.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) warning() *cachedir.Warning {
	return cachedir.NewWarning(func(msg string) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.list = append(w.list, msg)
	})
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.list...)
}

// cacheEntries lists the files of a compilation cache directory.
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, path)
		}
		return nil
	})
	return out
}

func chownAll(t *testing.T, path string, uid int) {
	t.Helper()
	filepath.WalkDir(path, func(p string, _ fs.DirEntry, err error) error {
		if err == nil {
			err = os.Lchown(p, uid, uid)
		}
		if err != nil {
			t.Fatal(err)
		}
		return nil
	})
}

func needRoot(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("giving files to another user needs root (CI runs the tests as root)")
	}
}

// refuseWrites makes every file write of the process fail past a few
// bytes (RLIMIT_FSIZE), as a full disk does, even for root, until the test
// ends. The limit is the whole process's: only a child process that runs
// one test may set it (TestCompilationCacheFullDisk).
func refuseWrites(t *testing.T) {
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limit := old
	limit.Cur = 4096
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old) })
}

// TestCompilationCacheIsOnlyAnOptimisation: a cache entry that is empty or
// truncated, a cache that cannot be written, a cache directory another
// user owns or may write, and an entry another user owns: the runtime
// compiles and runs scripts anyway, warns once, and neither uses nor keeps
// what it cannot trust.
func TestCompilationCacheIsOnlyAnOptimisation(t *testing.T) {
	ctx := context.Background()
	// One compilation makes a good entry that each case starts from.
	good := t.TempDir()
	rt, err := luau.New(ctx, luau.Config{CacheDir: good})
	if err != nil {
		t.Fatal(err)
	}
	rt.Close(ctx)
	entries := cacheEntries(t, good)
	if len(entries) == 0 {
		t.Fatal("the first compilation wrote no cache entry")
	}
	withEntry := func(t *testing.T, change func(path string)) string {
		dir := filepath.Join(t.TempDir(), "wazero")
		if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
			t.Fatal(err)
		}
		for _, e := range cacheEntries(t, dir) {
			change(e)
		}
		return dir
	}
	truncate := func(size func(int64) int64) func(string) {
		return func(path string) {
			info, err := os.Stat(path)
			if err == nil {
				err = os.Truncate(path, size(info.Size()))
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name  string
		root  bool
		setup func(t *testing.T) string
		want  string // in the warning
		// kept says the directory is another user's: nothing in it is
		// removed or written.
		kept bool
	}{
		{name: "empty entry", want: "compilationcache", setup: func(t *testing.T) string {
			return withEntry(t, truncate(func(int64) int64 { return 0 }))
		}},
		{name: "truncated entry", want: "compilationcache", setup: func(t *testing.T) string {
			return withEntry(t, truncate(func(n int64) int64 { return n / 2 }))
		}},
		{name: "group-writable directory", want: "may be written by other users", setup: func(t *testing.T) string {
			dir := withEntry(t, func(string) {})
			os.Chmod(dir, 0o770)
			return dir
		}},
		{name: "directory of another user", root: true, kept: true, want: "belongs to another user", setup: func(t *testing.T) string {
			dir := withEntry(t, func(string) {})
			chownAll(t, dir, nobody)
			return dir
		}},
		{name: "entry of another user", root: true, want: "belongs to another user", setup: func(t *testing.T) string {
			return withEntry(t, func(path string) { os.Lchown(path, nobody, nobody) })
		}},
		{name: "entry is a symbolic link", want: "symbolic link", setup: func(t *testing.T) string {
			return withEntry(t, func(path string) {
				target := filepath.Join(t.TempDir(), "elsewhere")
				os.Rename(path, target)
				os.Symlink(target, path)
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root {
				needRoot(t)
			}
			dir := tc.setup(t)
			before := cacheEntries(t, dir)
			runWarnedOnce(t, dir, tc.want)
			after := cacheEntries(t, dir)
			if tc.kept {
				if strings.Join(after, ",") != strings.Join(before, ",") {
					t.Errorf("another user's directory changed: %v, then %v", before, after)
				}
				return
			}
			// What could not be used is gone: the next start compiles
			// (and caches) without a warning.
			var again warnings
			rt, err = luau.New(ctx, luau.Config{CacheDir: dir, CacheWarning: again.warning()})
			if err != nil {
				t.Fatalf("New again: %v", err)
			}
			rt.Close(ctx)
			if tc.name != "group-writable directory" && len(again.all()) != 0 {
				t.Errorf("the next start warned again: %q", again.all())
			}
		})
	}
}

// runWarnedOnce runs a script with the compilation cache in dir and checks
// that it ran and that the cache warned once, naming want.
func runWarnedOnce(t *testing.T, dir, want string) {
	t.Helper()
	ctx := context.Background()
	var w warnings
	rt, err := luau.New(ctx, luau.Config{CacheDir: dir, CacheWarning: w.warning()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	res := rt.Execute(ctx, luau.Script{Source: []byte("return 1 + 1")})
	rt.Close(ctx)
	if res.Error != nil || string(res.Value) != "2" {
		t.Fatalf("the script failed: %+v", res)
	}
	got := w.all()
	if len(got) != 1 || !strings.Contains(got[0], want) || !strings.Contains(got[0], "running without it") {
		t.Fatalf("warnings %q, want one naming %q", got, want)
	}
}

// fullDiskChild, set in a child's environment, makes it the process that
// runs TestCompilationCacheFullDisk with file writes refused.
const fullDiskChild = "TOOLSCRIPT_TEST_FULL_DISK_CHILD"

// TestCompilationCacheFullDisk: a cache that cannot be written (a full
// disk) costs the run its cache and one warning. The writes are refused in
// a child process running this test alone, since the limit that refuses
// them is the process's and would refuse other tests' writes (and the
// testing package's own log) too.
func TestCompilationCacheFullDisk(t *testing.T) {
	if os.Getenv(fullDiskChild) != "" {
		refuseWrites(t)
		runWarnedOnce(t, filepath.Join(t.TempDir(), "wazero"), "compiled-module cache")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCompilationCacheFullDisk$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), fullDiskChild+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestCompilationCacheFullDisk") {
		t.Fatalf("the test with writes refused, in a child process: %v\n%s", err, out)
	}
}
