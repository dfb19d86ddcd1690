package positive_test

import (
	"fmt"
	"time"

	"github.com/toolscript/toolscript/host/platform/positive"
)

// A setting of zero (left unset) or less takes its default; a setting
// above zero stays, below or above the default alike; unsigned sizes and
// durations follow the same rule.
func ExampleOr() {
	fmt.Println(positive.Or(0, 64), positive.Or(-1, 64), positive.Or(1, 64), positive.Or(128, 64))
	fmt.Println(positive.Or(uint64(0), 7), positive.Or(uint64(3), 7))
	fmt.Println(positive.Or(time.Duration(0), time.Second), positive.Or(time.Millisecond, time.Second))
	// Output:
	// 64 64 1 128
	// 7 3
	// 1s 1ms
}
