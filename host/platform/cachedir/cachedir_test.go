package cachedir_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolscript/toolscript/host/platform/cachedir"
)

// TestOpenIn: the directories made are 0700; a user cache directory that
// is root's, or shared with the sticky bit, is used; one that another user
// owns or may write without the sticky bit is refused, as is a
// directory of toolscript's that another user owns or may write, or that
// is a symbolic link.
func TestOpenIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		root    bool
		prepare func(t *testing.T, base string)
		want    string // in the error; "" when usable
	}{
		{name: "new"},
		{name: "shared, sticky", prepare: func(t *testing.T, base string) { os.Chmod(base, 0o777|os.ModeSticky) }},
		{name: "shared, not sticky", want: "may be written by other users", prepare: func(t *testing.T, base string) { os.Chmod(base, 0o777) }},
		{name: "base of another user", root: true, want: "belongs to another user", prepare: func(t *testing.T, base string) {
			os.Chown(base, 65534, 65534)
		}},
		{name: "ours made by another user", root: true, want: "belongs to another user", prepare: func(t *testing.T, base string) {
			os.Mkdir(filepath.Join(base, "toolscript"), 0o700)
			os.Chown(filepath.Join(base, "toolscript"), 65534, 65534)
		}},
		{name: "ours writable by the group", want: "may be written by other users", prepare: func(t *testing.T, base string) {
			os.MkdirAll(filepath.Join(base, "toolscript", "sdk"), 0o700)
			os.Chmod(filepath.Join(base, "toolscript", "sdk"), 0o770)
		}},
		{name: "ours a symbolic link", want: "not a directory (a symbolic link)", prepare: func(t *testing.T, base string) {
			os.Symlink(t.TempDir(), filepath.Join(base, "toolscript"))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Getuid() != 0 {
				t.Skip("giving files to another user needs root (CI runs the tests as root)")
			}
			base := filepath.Join(t.TempDir(), "cache")
			os.Mkdir(base, 0o755)
			if tc.prepare != nil {
				tc.prepare(t, base)
			}
			dir, err := cachedir.OpenIn(base, "toolscript", "sdk")
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one naming %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range []string{filepath.Dir(dir), dir} {
				if info, err := os.Lstat(d); err != nil || info.Mode().Perm() != cachedir.DirMode {
					t.Errorf("%s: %v %v, want mode %v", d, info.Mode(), err, cachedir.DirMode)
				}
			}
		})
	}
}

// TestWarningOnce: a Warning tells the first problem only.
func TestWarningOnce(t *testing.T) {
	var got []string
	w := cachedir.NewWarning(func(msg string) { got = append(got, msg) })
	w.Warn("the cache", os.ErrPermission)
	w.Warn("the cache", os.ErrNotExist)
	if len(got) != 1 || got[0] != "the cache cannot be used (permission denied); running without it" {
		t.Errorf("warnings %q", got)
	}
	var none *cachedir.Warning
	none.Warn("the cache", os.ErrPermission) // no one to tell: no panic
}
