package openapi

import (
	"context"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/toolscript/toolscript/internal/testspecs"
)

// BenchmarkLoadGitHub loads GitHub's spec (1,223 operations, 13 MB):
// cold parses it, warm reads the cache. heap-MB is the live heap holding
// only the loaded API afterwards.
func BenchmarkLoadGitHub(b *testing.B) {
	spec := testspecs.GitHub(b)
	src := Source{Name: "gh", Spec: spec}
	report := func(b *testing.B, keep any) {
		runtime.GC()
		debug.FreeOSMemory()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		b.ReportMetric(float64(m.HeapInuse)/(1<<20), "heap-MB")
		runtime.KeepAlive(keep)
	}
	b.Run("cold", func(b *testing.B) {
		var api any
		for b.Loop() {
			var err error
			if api, err = Load(context.Background(), src, Options{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b, api)
	})
	b.Run("warm", func(b *testing.B) {
		cache := NewCache(b.TempDir(), "bench", nil)
		if _, err := Load(context.Background(), src, Options{Cache: cache}); err != nil {
			b.Fatal(err)
		}
		var api any
		for b.Loop() {
			var parsed bool
			var err error
			if api, parsed, err = LoadParsed(context.Background(), src, Options{Cache: cache}); err != nil || parsed {
				b.Fatal("not from the cache", err)
			}
		}
		report(b, api)
	})
}
