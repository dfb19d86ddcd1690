package tests

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/sdk"
	"github.com/toolscript/toolscript/internal/testapi"
)

// The scripts BenchmarkDryRun runs in both modes: the same work, its
// unsafe part held in a dry run.
var dryRunScripts = []struct{ name, source string }{
	// Safe and unsafe calls, files written and read back.
	{"mixed", `local block = string.rep("x", 4096)
		local n = 0
		for i = 1, 20 do
			n += sdk.get_pet({petId = 7}).id
			local pet = sdk.create_pet({name = "p" .. i})
			local f = io.open("out/" .. i .. ".txt", "w")
			f:write(block, i)
			f:close()
			n += #io.open("out/" .. i .. ".txt"):read("*a")
		end
		return n`},
	// Only files: the overlay against the real directory.
	{"io", `local block = string.rep("x", 4096)
		local n = 0
		for i = 1, 50 do
			local f = io.open("out/" .. i .. ".txt", "w")
			f:write(block, i)
			f:close()
			local g = io.open("log.txt", "a")
			g:write("line ", i, "\n")
			g:close()
			n += #io.open("out/" .. i .. ".txt"):read("*a")
		end
		return n`},
	// Only safe calls: what classifying every call costs.
	{"safe-calls", `local n = 0 for i = 1, 100 do n += sdk.get_pet({petId = 7}).id end return n`},
}

// BenchmarkDryRun runs each script as a real run and as a dry run against
// the local test API and a real io directory, alternately, and reports
// the median time of each and the dry run's cost over the real run
// (target: at most 10%; a negative cost means the dry run was faster,
// having sent fewer requests).
//
//	go test ./tests -run '^$' -bench DryRun -benchtime 30x
func BenchmarkDryRun(b *testing.B) {
	eachDryRunScript(b, func(b *testing.B, dir string, execute func(*effects.Run) time.Duration) {
		run := func(mode effects.Mode) time.Duration {
			var fx *effects.Run
			if mode == effects.DryRun {
				fx = effects.New(effects.DryRun)
			}
			return execute(fx)
		}
		run(effects.Real) // warm: connections, the directory's files
		run(effects.DryRun)
		// Every run starts from the same directory: a real run's appends
		// would otherwise grow the file each later run appends to.
		restore := snapshotDir(b, dir)
		var real, dry []time.Duration
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			restore()
			b.StartTimer()
			real = append(real, run(effects.Real))
			b.StopTimer()
			restore()
			b.StartTimer()
			dry = append(dry, run(effects.DryRun))
		}
		r, d := median(real), median(dry)
		b.ReportMetric(float64(r.Microseconds()), "real-µs")
		b.ReportMetric(float64(d.Microseconds()), "dry-run-µs")
		b.ReportMetric(100*(float64(d)-float64(r))/float64(r), "dry-run-over-real-%")
	})
}

// eachDryRunScript runs bench on each of dryRunScripts as a sub-benchmark
// with the script's io directory and execute, which runs the script once
// in it against the local test API under fx (nil: a real run) and returns
// how long it took.
func eachDryRunScript(b *testing.B, bench func(b *testing.B, dir string, execute func(fx *effects.Run) time.Duration)) {
	api := testapi.New(b)
	rt, client := petsSDK(b, api.URL)
	for _, sc := range dryRunScripts {
		b.Run(sc.name, func(b *testing.B) {
			dir := b.TempDir()
			bench(b, dir, func(fx *effects.Run) time.Duration { return timeScript(b, rt, client, sc.source, dir, fx) })
		})
	}
}

// BenchmarkRecordReplay runs each of BenchmarkDryRun's scripts as a real
// run, as a recorded run (its trace streamed to a file) and as a replay of
// that trace, in turn, against the local test API and a real io
// directory, and reports the median time of each and the cost of
// recording and of replaying over the real run (targets: recording at
// most 20%, a replay at most 10%; a negative cost is faster: a replay
// sends nothing and touches no file).
//
//	go test ./tests -run '^$' -bench RecordReplay -benchtime 30x
func BenchmarkRecordReplay(b *testing.B) {
	eachDryRunScript(b, func(b *testing.B, dir string, execute func(*effects.Run) time.Duration) {
		tracePath := filepath.Join(b.TempDir(), "run.trace")
		var traceBytes int64
		real := func() time.Duration { return execute(nil) }
		record := func() time.Duration {
			start := time.Now()
			os.Remove(tracePath)
			f, err := os.OpenFile(tracePath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if err != nil {
				b.Fatal(err)
			}
			w, err := trace.NewWriter(f, trace.Header{Toolscript: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			execute(effects.NewRecording(w))
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			return time.Since(start)
		}
		replay := func() time.Duration {
			start := time.Now()
			f, err := os.Open(tracePath)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			r, _, err := trace.NewReader(f, 0)
			if err != nil {
				b.Fatal(err)
			}
			execute(effects.NewReplay(r))
			return time.Since(start)
		}
		real() // warm: connections, the directory's files
		record()
		replay()
		if info, err := os.Stat(tracePath); err == nil {
			traceBytes = info.Size()
		}
		// Every run starts from the same directory (snapshotDir).
		restore := snapshotDir(b, dir)
		var reals, recs, reps []time.Duration
		b.ResetTimer()
		for range b.N {
			b.StopTimer()
			restore()
			b.StartTimer()
			reals = append(reals, real())
			b.StopTimer()
			restore()
			b.StartTimer()
			recs = append(recs, record())
			reps = append(reps, replay())
		}
		r, rec, rep := median(reals), median(recs), median(reps)
		b.ReportMetric(float64(r.Microseconds()), "real-µs")
		b.ReportMetric(float64(rec.Microseconds()), "record-µs")
		b.ReportMetric(float64(rep.Microseconds()), "replay-µs")
		b.ReportMetric(100*(float64(rec)-float64(r))/float64(r), "record-over-real-%")
		b.ReportMetric(100*(float64(rep)-float64(r))/float64(r), "replay-over-real-%")
		b.ReportMetric(float64(traceBytes), "trace-bytes")
	})
}

// snapshotDir keeps the regular files under dir as they are now and
// returns what puts them back (files added since are removed).
func snapshotDir(b *testing.B, dir string) func() {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files[p], err = os.ReadFile(p)
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return func() {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && files[p] == nil {
				err = os.Remove(p)
			}
			return err
		})
		for p, data := range files {
			if err == nil {
				err = os.WriteFile(p, data, 0o644)
			}
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// timeScript runs source once on rt with client's sdk and io in dir,
// under fx (nil: a real run), and returns how long it took.
func timeScript(b *testing.B, rt *luau.Runtime, client *sdk.Client, source, dir string, fx *effects.Run) time.Duration {
	b.Helper()
	start := time.Now()
	res := rt.Execute(context.Background(), luau.Script{Source: []byte(source),
		SDK: client.Session(nil).WithEffects(fx), Effects: fx,
		IO: &luau.IO{Dir: dir}, Limits: luau.Limits{Timeout: time.Minute}})
	elapsed := time.Since(start)
	if res.Error != nil {
		b.Fatalf("%s: %+v", fx.Mode(), res.Error)
	}
	return elapsed
}
