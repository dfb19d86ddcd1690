package luau

import (
	"testing"

	"github.com/toolscript/toolscript/host/contract/effects/trace"
)

// TestTraceKnowsTheIOStatuses: a trace accepts exactly the failure
// statuses the io host functions return.
func TestTraceKnowsTheIOStatuses(t *testing.T) {
	if trace.MinResult != min(ioFailed, ioOverLimit) {
		t.Errorf("trace.MinResult is %d, the io statuses go down to %d", trace.MinResult, min(ioFailed, ioOverLimit))
	}
}
