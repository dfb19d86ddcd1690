package tests

import (
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/serve/requeststate"
)

// resumeBenchScript makes 200 safe calls and reads a file (the prefix),
// then the POST a person is asked about, then writes a file.
const resumeBenchScript = `
local n = 0
for i = 1, 200 do n += sdk.get_pet({petId = 7}).id end
local f = io.open("in.txt", "r")
local s = f:read("a")
f:close()
local created = sdk.create_pet({name = s})
local out = io.open("out.txt", "w")
out:write(created.name, n)
out:close()
return n
`

// BenchmarkResume runs resumeBenchScript as a real run (nothing asked),
// and as the resume of its pause at the POST (the state opened by a
// replica, its files checked, the prefix replayed, the rest live), in
// turn, against the local test API, and reports the median time of each
// and the resume's cost over the real run (the spec: at most the
// prefix's replay, a fraction of the real run; negative is faster).
//
//	go test ./tests -run '^$' -bench Resume -benchtime 20x
func BenchmarkResume(b *testing.B) {
	_, rt, client, dir := resumeSetup(b)
	key, _ := requeststate.NewKey()
	sealer, _ := requeststate.NewSealer("", requeststate.NewSpent(0), key)
	bind := requeststate.Binding{User: "bench", ScriptSHA256: sum(resumeBenchScript)}
	token := pauseScript(b, rt, client, resumeBenchScript, dir, sealer, bind, time.Now().Add(time.Hour))
	real := func() time.Duration {
		start := time.Now()
		if res := execute(rt, client, resumeBenchScript, dir, nil); res.Error != nil {
			b.Fatal(res.Error)
		}
		return time.Since(start)
	}
	resume := func() time.Duration {
		start := time.Now()
		replica, _ := requeststate.NewSealer("", requeststate.NewSpent(0), key)
		st, err := replica.Open(token, bind, time.Now())
		if err != nil {
			b.Fatal(err)
		}
		res, err := resumeState(b, rt, client, resumeBenchScript, dir, st, effects.Approve)
		if err != nil || res.Error != nil {
			b.Fatal(err, res.Error)
		}
		return time.Since(start)
	}
	real()
	resume()
	var reals, resumes []time.Duration
	b.ResetTimer()
	for range b.N {
		reals = append(reals, real())
		resumes = append(resumes, resume())
	}
	r, rs := median(reals), median(resumes)
	b.ReportMetric(float64(r.Microseconds()), "real-µs")
	b.ReportMetric(float64(rs.Microseconds()), "resume-µs")
	b.ReportMetric(100*(float64(rs)-float64(r))/float64(r), "resume-over-real-%")
	b.ReportMetric(float64(len(token)), "state-bytes")
}
