package positive_test

import (
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/platform/positive"
)

func TestOr(t *testing.T) {
	for _, c := range []struct {
		name   string
		v, def int64
		want   int64
	}{
		{"unset takes the default", 0, 64, 64},
		{"negative takes the default", -1, 64, 64},
		{"set stays", 1, 64, 1},
		{"set above the default stays", 128, 64, 128},
	} {
		if got := positive.Or(c.v, c.def); got != c.want {
			t.Errorf("%s: Or(%d, %d) = %d, want %d", c.name, c.v, c.def, got, c.want)
		}
	}
	if got := positive.Or(time.Duration(0), time.Second); got != time.Second {
		t.Errorf("Or(0s, 1s) = %v", got)
	}
	if got := positive.Or(uint64(0), 7); got != 7 {
		t.Errorf("Or(uint64 0, 7) = %d", got)
	}
	if got := positive.Or(uint64(3), 7); got != 3 {
		t.Errorf("Or(uint64 3, 7) = %d", got)
	}
}
