package luau

import (
	"fmt"
	"time"

	"github.com/tetratelabs/wazero/api"

	"github.com/toolscript/toolscript/host/runtime/memimage"
)

// An image is the linear memory of an instance whose Luau state has just
// been created, kept as the difference from the memory wazero instantiates
// (the module's data segments, zeros elsewhere). A Runtime makes one from the
// first instance it creates; every later instance is instantiated without
// running the module's initialisation and gets its memory from the image
// instead. That is the same state, byte for byte, at a fraction of the cost:
// the template runs _initialize and ts_init (the C++ constructors, the Luau
// state, the sandboxed libraries), an image only copies the pages they
// wrote. On Linux the image also has a template (memimage.Template): the
// whole memory in a sealed file, which new instances map copy-on-write
// instead of copying the runs.
//
// An image holds nothing from any execution: it is taken before the
// template runs a script. What differs between instances is handled beside
// it: the random seed (ts_run's seed) and the monotonic clock (instanceClock).
type image struct {
	// size is the length of the linear memory, in bytes.
	size uint32
	// runs are the parts of the memory that differ from a fresh
	// instantiation, in whole pages.
	runs []memimage.Run
	// stackPointer is __stack_pointer after initialisation.
	stackPointer uint64
	// outAddr and inputAddr are the shim's buffers (ts_out_addr,
	// ts_input_addr).
	outAddr, inputAddr uint32
	// clock is where the template's monotonic clock stood when the image
	// was taken: restored instances' clocks start there.
	clock int64
	// tableHot are the function table's entries every execution calls,
	// which instances fill before they wait in the pool (learnHot), when
	// the module fills its table on demand.
	tableHot []uint32
	// template holds the whole memory, for instances to map copy-on-write
	// instead of copying runs (Linux); nil elsewhere or when it could not
	// be made.
	template *memimage.Template
}

// newImage takes the image of inst, an instance whose state ts_init has
// just created. fresh is the memory of a module instantiated without
// initialisation.
func newImage(inst *instance, fresh []byte, clock int64) (*image, error) {
	size := inst.mem.Size()
	mem, ok := inst.mem.Read(0, size)
	if !ok {
		return nil, fmt.Errorf("luau: reading %d bytes of the template's memory", size)
	}
	img := &image{
		size:         size,
		stackPointer: inst.sp.Get(),
		outAddr:      inst.outAddr,
		inputAddr:    inst.inputAddr,
		clock:        clock,
	}
	img.runs = memimage.Diff(mem, fresh)
	return img, nil
}

// restore gives mod, instantiated without initialisation, the memory and
// globals of the image, and binds inst to it.
func (img *image) restore(inst *instance, mod api.Module) error {
	mem := mod.Memory()
	if cur := mem.Size(); cur < img.size {
		if _, ok := mem.Grow((img.size - cur) / wasmPageSize); !ok {
			return fmt.Errorf("luau: growing a new instance's memory to %d bytes", img.size)
		}
	}
	buf, ok := mem.Read(0, img.size)
	if !ok {
		return fmt.Errorf("luau: reading %d bytes of a new instance's memory", img.size)
	}
	if !inst.fromTemplate {
		memimage.Apply(buf, img.runs)
	}
	if err := inst.lookup(mod); err != nil {
		return err
	}
	inst.sp.Set(img.stackPointer)
	inst.outAddr, inst.inputAddr = img.outAddr, img.inputAddr
	return nil
}

// instanceClock is the monotonic clock of one instance, the clock C's
// clock() and so os.clock read. wasi-libc notes where the clock stands when
// the module initialises and clock() counts from there. The clock stands
// still until an execution starts (restart): through the template's
// initialisation, so that the point clock() counts from is the same in
// every process (a replayed os.clock gives what the recording's gave), and
// while the instance waits in the pool. A restored instance did not
// initialise: its clock starts where the template's stood when the image
// was taken. It runs from the start of the execution, so that os.clock()
// measures the script's own time from about zero, and never goes
// backwards.
type instanceClock struct {
	start  time.Time
	offset int64
	// last is the latest reading: for the template, where its clock stood
	// when the image was taken.
	last int64
	// running: an execution has started (restart).
	running bool
}

func newInstanceClock(offset int64) instanceClock {
	return instanceClock{offset: offset, last: offset}
}

func (c *instanceClock) nanotime() int64 {
	if c.running {
		c.last = c.offset + int64(time.Since(c.start))
	}
	return c.last
}

// restart makes the clock run from where it stands now.
func (c *instanceClock) restart() {
	c.offset, c.start, c.running = c.last, time.Now(), true
}
