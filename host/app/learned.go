package app

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/platform/termtext"
	"github.com/toolscript/toolscript/host/sdk/learned"
)

// learnedTypes are the result types learned (host/sdk/learned) from the
// traces of file's [effects] record_dir (its own files: a hosted server's
// users' directories are theirs) and of paths (--learn: files or
// directories), within learned.DefaultLimits; nil when there are none. A
// trace that cannot be read is a warning to warn, never an error.
func learnedTypes(ctx context.Context, file *config.File, getenv func(string) string, paths []string, warn func(string)) learned.Set {
	dir, err := file.RecordDir(getenv)
	if err != nil {
		warn(err.Error())
	}
	if dir != "" {
		if _, err := os.Stat(dir); err == nil {
			paths = append([]string{dir}, paths...)
		}
	}
	if len(paths) == 0 {
		return nil
	}
	return learned.Load(ctx, paths, learned.DefaultLimits(), warn)
}

// warnTo writes each warning as a line of w ("toolscript: warning: ...",
// escaped: a trace's path and its faults are in them); nil w drops them.
func warnTo(w io.Writer) func(string) {
	return func(msg string) {
		if w != nil {
			fmt.Fprintf(w, "toolscript: warning: %s\n", termtext.Line(msg))
		}
	}
}
