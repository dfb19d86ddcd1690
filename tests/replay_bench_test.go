package tests

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/contract/effects/trace"
	"github.com/toolscript/toolscript/internal/testapi"
)

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
	api := testapi.New(b)
	rt, client := benchSDK(b, api)
	for _, sc := range dryRunScripts {
		b.Run(sc.name, func(b *testing.B) {
			dir := b.TempDir()
			tracePath := filepath.Join(b.TempDir(), "run.trace")
			var traceBytes int64
			execute := func(fx *effects.Run) time.Duration {
				return timeScript(b, rt, client, sc.source, dir, fx)
			}
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
			r, rec, rep := medianDuration(reals), medianDuration(recs), medianDuration(reps)
			b.ReportMetric(float64(r.Microseconds()), "real-µs")
			b.ReportMetric(float64(rec.Microseconds()), "record-µs")
			b.ReportMetric(float64(rep.Microseconds()), "replay-µs")
			b.ReportMetric(100*(float64(rec)-float64(r))/float64(r), "record-over-real-%")
			b.ReportMetric(100*(float64(rep)-float64(r))/float64(r), "replay-over-real-%")
			b.ReportMetric(float64(traceBytes), "trace-bytes")
		})
	}
}
