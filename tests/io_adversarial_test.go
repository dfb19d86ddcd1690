//go:build unix

package tests

import (
	"crypto/sha256"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/toolscript/toolscript/host/runtime/luau"
	"github.com/toolscript/toolscript/host/runtime/result"
	"github.com/toolscript/toolscript/internal/testfile"
)

// Attacks on the io sandbox, run for real against the file system: links
// planted inside the io directory that lead outside, links swapped while the
// script runs, FIFOs, odd names, the write budget at its edge, thousands of
// files, a huge sparse file. After each, nothing outside the io directory
// was read or changed (inotify sees every open, read and write there;
// contents, modes and times are compared too) and the error says why.

const secret = "TOP SECRET: no script may read this"

// scene is an io directory next to an outside directory holding secrets.
type scene struct {
	top     string // holds both
	dir     string // the io directory
	outside string
	before  map[string]string
	watch   *watcher
}

func newScene(t *testing.T) *scene {
	t.Helper()
	top := t.TempDir()
	s := &scene{top: top, dir: filepath.Join(top, "io"), outside: filepath.Join(top, "outside")}
	testfile.Write(t, filepath.Join(s.outside, "secret.txt"), secret)
	testfile.Write(t, filepath.Join(s.outside, "sub", "secret2.txt"), secret)
	if err := os.Mkdir(s.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return s
}

// arm records the state outside the io directory and starts watching it.
// Call it after planting, just before the script runs.
func (s *scene) arm(t *testing.T) {
	t.Helper()
	s.before = snapshotOutside(t, s)
	s.watch = watchTree(t, s.outside)
}

// verify asserts that the run neither read nor changed anything outside the
// io directory.
func (s *scene) verify(t *testing.T, res *result.Result) {
	t.Helper()
	if ev := s.watch.events(); len(ev) > 0 {
		t.Errorf("the outside directory was accessed:\n%s", strings.Join(ev, "\n"))
	}
	if after := snapshotOutside(t, s); !reflect.DeepEqual(after, s.before) {
		t.Errorf("the outside changed:\nbefore %v\nafter  %v", s.before, after)
	}
	if res != nil && strings.Contains(string(res.JSON()), "TOP SECRET") {
		t.Errorf("the result carries the secret: %s", res.JSON())
	}
}

// snapshotOutside describes everything in the outside directory, and the
// names beside the io directory, with contents, modes and times.
func snapshotOutside(t *testing.T, s *scene) map[string]string {
	t.Helper()
	state := map[string]string{}
	err := filepath.WalkDir(s.outside, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		if info.Mode().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			desc += fmt.Sprintf(" %x", sha256.Sum256(data))
		}
		state[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(s.top)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		state["top:"+e.Name()] = ""
	}
	return state
}

type attack struct {
	name   string
	plant  func(t *testing.T, s *scene)
	script string
	// kind is the expected error kind; empty when the script succeeds.
	kind     result.Kind
	messages []string
	result   string
	check    func(t *testing.T, s *scene, res *result.Result)
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

const escapes = "path escapes the io directory"

// checkAttack checks a result: the error kind and message fragments, or
// (kind "") the result as JSON.
func checkAttack(t *testing.T, res *result.Result, kind result.Kind, value string, messages ...string) {
	t.Helper()
	if kind == "" {
		if res.Error != nil {
			t.Fatalf("unexpected error: %+v", res.Error)
		}
		if value != "" && string(res.Value) != value {
			t.Errorf("result = %s, want %s", res.Value, value)
		}
		return
	}
	if res.Error == nil {
		t.Fatalf("want a %s error, got result %s", kind, res.Value)
	}
	if res.Error.Kind != kind {
		t.Errorf("kind = %s, want %s (message %q)", res.Error.Kind, kind, res.Error.Message)
	}
	for _, m := range messages {
		if !strings.Contains(res.Error.Message, m) {
			t.Errorf("message = %q, want it to contain %q", res.Error.Message, m)
		}
	}
}

func fileHolds(t *testing.T, name, want string) {
	t.Helper()
	if got := readFile(t, name); got != want {
		t.Errorf("%s holds %q, want %q", filepath.Base(name), got, want)
	}
}

func noFile(t *testing.T, name string) {
	t.Helper()
	if _, err := os.Lstat(name); !os.IsNotExist(err) {
		t.Errorf("%s exists (err %v), want it absent", name, err)
	}
}

func runAttacks(t *testing.T, attacks []attack) {
	t.Helper()
	for _, a := range attacks {
		t.Run(a.name, func(t *testing.T) {
			t.Parallel()
			s := newScene(t)
			if a.plant != nil {
				a.plant(t, s)
			}
			s.arm(t)
			res := runIO(t, s.dir, a.script, luau.IO{MaxBytes: 1 << 20}, luau.Limits{Timeout: 10 * time.Second})
			s.verify(t, res)
			checkAttack(t, res, a.kind, a.result, a.messages...)
			if a.check != nil {
				a.check(t, s, res)
			}
		})
	}
}

// escapeOp is an io call through a planted link: its script, and the
// prefix of the message that refuses it.
type escapeOp struct{ name, script, prefix string }

// escapeAttacks is each op through a link planted by abs (an absolute
// target) and by rel (a relative one), each refused as escaping.
func escapeAttacks(abs, rel func(*testing.T, *scene), ops []escapeOp) []attack {
	var attacks []attack
	for _, plant := range []struct {
		name string
		fn   func(*testing.T, *scene)
	}{{"absolute", abs}, {"relative", rel}} {
		for _, op := range ops {
			attacks = append(attacks, attack{
				name:     plant.name + " " + op.name,
				plant:    plant.fn,
				script:   op.script,
				kind:     result.IO,
				messages: []string{op.prefix + escapes},
			})
		}
	}
	return attacks
}

func TestIOAttackLinkToFileOutside(t *testing.T) {
	abs := func(t *testing.T, s *scene) {
		symlink(t, filepath.Join(s.outside, "secret.txt"), filepath.Join(s.dir, "link.txt"))
	}
	rel := func(t *testing.T, s *scene) { symlink(t, "../outside/secret.txt", filepath.Join(s.dir, "link.txt")) }
	deep := func(t *testing.T, s *scene) {
		symlink(t, "../../../outside/secret.txt", filepath.Join(s.dir, "a", "b", "link.txt"))
	}
	attacks := escapeAttacks(abs, rel, []escapeOp{
		{"read", `return io.open("link.txt"):read("*a")`, "io.open: 'link.txt': "},
		{"write", `io.open("link.txt", "w"):write("pwned"):close()`, "io.open: 'link.txt': "},
		{"append", `io.open("link.txt", "a"):write("pwned"):close()`, "io.open: 'link.txt': "},
		{"update", `io.open("link.txt", "r+"):write("pwned"):close()`, "io.open: 'link.txt': "},
		{"w+", `io.open("link.txt", "w+"):write("pwned"):close()`, "io.open: 'link.txt': "},
		{"lines", `for l in io.lines("link.txt") do print(l) end`, "io.open: 'link.txt': "},
		{"file.save", `file.save("link.txt", "pwned")`, "io.open: 'link.txt': "},
	})
	attacks = append(attacks,
		attack{
			name:     "through directories",
			plant:    deep,
			script:   `return io.open("a/b/link.txt"):read("*a")`,
			kind:     result.IO,
			messages: []string{"io.open: 'a/b/link.txt': " + escapes},
		},
		attack{
			name:   "os.remove removes the link, not its target",
			plant:  abs,
			script: `return {os.remove("link.txt"), io.list()}`,
			result: `[true,[]]`,
			check: func(t *testing.T, s *scene, res *result.Result) {
				noFile(t, filepath.Join(s.dir, "link.txt"))
				fileHolds(t, filepath.Join(s.outside, "secret.txt"), secret)
			},
		},
		attack{
			name:   "a listing shows the link's name only",
			plant:  abs,
			script: `return io.list()`,
			result: `["link.txt"]`,
		},
		attack{
			name: "an absolute link to a file inside is refused too",
			plant: func(t *testing.T, s *scene) {
				testfile.Write(t, filepath.Join(s.dir, "real.txt"), "inside")
				symlink(t, filepath.Join(s.dir, "real.txt"), filepath.Join(s.dir, "abs.txt"))
			},
			script:   `return io.open("abs.txt"):read("*a")`,
			kind:     result.IO,
			messages: []string{"io.open: 'abs.txt': " + escapes},
		},
	)
	runAttacks(t, attacks)
}

func TestIOAttackLinkToDirectoryOutside(t *testing.T) {
	abs := func(t *testing.T, s *scene) { symlink(t, s.outside, filepath.Join(s.dir, "out")) }
	rel := func(t *testing.T, s *scene) { symlink(t, "../outside", filepath.Join(s.dir, "out")) }
	attacks := escapeAttacks(abs, rel, []escapeOp{
		{"read", `return io.open("out/secret.txt"):read("*a")`, "io.open: 'out/secret.txt': "},
		{"read deeper", `return io.open("out/sub/secret2.txt"):read("*a")`, "io.open: 'out/sub/secret2.txt': "},
		{"overwrite", `io.open("out/secret.txt", "w"):write("pwned"):close()`, "io.open: 'out/secret.txt': "},
		{"create", `io.open("out/new.txt", "w"):write("pwned"):close()`, "io.open: 'out/new.txt': "},
		{"create parents", `io.open("out/new/dir/x.txt", "w"):write("pwned"):close()`, "io.open: 'out/new/dir/x.txt': "},
		{"list", `return io.list("out")`, "io.list: 'out': "},
		{"list a subdirectory", `return io.list("out/sub")`, "io.list: 'out/sub': "},
		{"remove", `os.remove("out/secret.txt")`, "os.remove: 'out/secret.txt': "},
	})
	runAttacks(t, attacks)
}

func TestIOAttackLinkChains(t *testing.T) {
	chain := func(t *testing.T, s *scene) {
		symlink(t, "b", filepath.Join(s.dir, "a"))
		symlink(t, "sub/c", filepath.Join(s.dir, "b"))
		symlink(t, "../../outside/secret.txt", filepath.Join(s.dir, "sub", "c"))
	}
	dirChain := func(t *testing.T, s *scene) {
		symlink(t, "d2", filepath.Join(s.dir, "d1"))
		symlink(t, "../outside", filepath.Join(s.dir, "d2"))
	}
	inside := func(t *testing.T, s *scene) {
		testfile.Write(t, filepath.Join(s.dir, "data", "real.txt"), "inside")
		symlink(t, "ok2", filepath.Join(s.dir, "ok1"))
		symlink(t, "data/real.txt", filepath.Join(s.dir, "ok2"))
		symlink(t, "data", filepath.Join(s.dir, "dlink"))
	}
	runAttacks(t, []attack{
		{name: "chain to a file outside: read", plant: chain, script: `return io.open("a"):read("*a")`,
			kind: result.IO, messages: []string{"io.open: 'a': " + escapes}},
		{name: "chain to a file outside: write", plant: chain, script: `io.open("a", "w"):write("pwned")`,
			kind: result.IO, messages: []string{"io.open: 'a': " + escapes}},
		{name: "chain to a directory outside", plant: dirChain, script: `return io.open("d1/secret.txt"):read("*a")`,
			kind: result.IO, messages: []string{"io.open: 'd1/secret.txt': " + escapes}},
		{name: "chain to a directory outside: list", plant: dirChain, script: `return io.list("d1")`,
			kind: result.IO, messages: []string{"io.list: 'd1': " + escapes}},
		{
			name: "a loop of links", script: `return io.open("l1"):read("*a")`,
			plant: func(t *testing.T, s *scene) {
				symlink(t, "l2", filepath.Join(s.dir, "l1"))
				symlink(t, "l1", filepath.Join(s.dir, "l2"))
			},
			kind: result.IO, messages: []string{"io.open: 'l1': too many levels of symbolic links"},
		},
		{
			name: "links that stay inside are followed", plant: inside,
			script: `local a = io.open("ok1"):read("*a") io.open("ok1", "a"):write("+"):close() return {a, io.open("dlink/real.txt"):read("*a"), io.list("dlink")}`,
			result: `["inside","inside+",["real.txt"]]`,
			check: func(t *testing.T, s *scene, res *result.Result) {
				fileHolds(t, filepath.Join(s.dir, "data", "real.txt"), "inside+")
				// The file a link reaches is reported by its own name.
				if got := touchedString(res.FilesTouched); got != "data/real.txt:append:7" {
					t.Errorf("files_touched = %s, want data/real.txt:append:7", got)
				}
			},
		},
	})
}

// A link swapped back and forth, between a regular file and a link to a
// file or directory outside, while the script opens, reads and writes it in
// a loop: whatever it meets at each moment, it never gets out.
func TestIOAttackLinksSwappedDuringTheRun(t *testing.T) {
	s := newScene(t)
	testfile.Write(t, filepath.Join(s.dir, "swap.txt"), "inside")
	if err := os.Mkdir(filepath.Join(s.dir, "swapdir"), 0o755); err != nil {
		t.Fatal(err)
	}
	testfile.Write(t, filepath.Join(s.dir, "swapdir", "secret.txt"), "inside")
	s.arm(t)

	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		file, link := filepath.Join(s.dir, "swap.txt"), filepath.Join(s.dir, "swap.new")
		dir, dirLink := filepath.Join(s.dir, "swapdir"), filepath.Join(s.dir, "swapdir.new")
		plain := filepath.Join(s.dir, "plain.tmp")
		plainDir := filepath.Join(s.dir, "plaindir.tmp")
		for i := 0; !stop.Load(); i++ {
			if i%2 == 0 {
				os.Remove(link)
				os.Symlink(filepath.Join(s.outside, "secret.txt"), link)
				os.Rename(link, file) // atomically replaces the file with the link
				os.Remove(dirLink)
				os.Symlink(s.outside, dirLink)
				os.RemoveAll(dir + ".old")
				os.Rename(dir, dir+".old")
				os.Rename(dirLink, dir)
			} else {
				os.WriteFile(plain, []byte("inside"), 0o644)
				os.Rename(plain, file)
				os.MkdirAll(plainDir, 0o755)
				os.WriteFile(filepath.Join(plainDir, "secret.txt"), []byte("inside"), 0o644)
				os.Remove(dir)
				os.RemoveAll(dir)
				os.Rename(plainDir, dir)
			}
			swaps.Add(1)
			runtime.Gosched()
		}
	}()

	res := runIO(t, s.dir, (`
			local stats = {opened = 0, refused = 0, leaked = 0, wrote = 0}
			local deadline = os.clock() + 1.5
			while os.clock() < deadline do
				for _, name in ipairs({"swap.txt", "swapdir/secret.txt"}) do
					local ok, f = pcall(io.open, name)
					if ok then
						stats.opened += 1
						local data = f:read("*a")
						if data ~= "inside" and data ~= "" then stats.leaked += 1 end
						f:close()
					else
						stats.refused += 1
					end
					local ok2, g = pcall(io.open, name, "w")
					if ok2 then
						local ok3 = pcall(function() g:write("inside") g:close() end)
						if ok3 then stats.wrote += 1 end
					end
				end
			end
			return stats`), luau.IO{MaxBytes: 1 << 30}, luau.Limits{Timeout: 20 * time.Second})
	stop.Store(true)
	wg.Wait()
	s.verify(t, res)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	t.Logf("%d swaps; the script saw %s", swaps.Load(), res.Value)
	if strings.Contains(string(res.Value), `"leaked":0`) == false {
		t.Errorf("the script read something that is not inside: %s", res.Value)
	}
	if !strings.Contains(string(res.Value), `"refused":`) || strings.Contains(string(res.Value), `"refused":0,`) {
		t.Logf("the swaps never caught the script on a link (timing): %s", res.Value)
	}
}

// FIFOs, whether named directly or through a link, are refused at once:
// opening one for reading or writing would otherwise block the host.
func TestIOAttackFIFO(t *testing.T) {
	plant := func(t *testing.T, s *scene) {
		if err := syscall.Mkfifo(filepath.Join(s.dir, "fifo"), 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		symlink(t, "fifo", filepath.Join(s.dir, "fifolink"))
	}
	const why = "is a named pipe (FIFO): only regular files can be opened"
	var attacks []attack
	for _, name := range []string{"fifo", "fifolink"} {
		for _, op := range []struct{ name, script, prefix string }{
			{"read", `return io.open("%s"):read("*a")`, "io.open"},
			{"write", `io.open("%s", "w"):write("x")`, "io.open"},
			{"append", `io.open("%s", "a"):write("x")`, "io.open"},
			{"update", `io.open("%s", "r+"):write("x")`, "io.open"},
			{"lines", `for l in io.lines("%s") do end`, "io.open"},
			{"save", `file.save("%s", "x")`, "io.open"},
			{"list", `io.list("%s")`, "io.list"},
		} {
			message := fmt.Sprintf("%s: '%s': %s", op.prefix, name, why)
			if op.name == "list" {
				message = fmt.Sprintf("io.list: '%s': not a directory", name)
			}
			attacks = append(attacks, attack{
				name:     name + " " + op.name,
				plant:    plant,
				script:   fmt.Sprintf(op.script, name),
				kind:     result.IO,
				messages: []string{message},
			})
		}
	}
	attacks = append(attacks, attack{
		name:   "removing a FIFO removes it",
		plant:  plant,
		script: `os.remove("fifolink") return {os.remove("fifo"), io.list()}`,
		result: `[true,[]]`,
	})
	start := time.Now()
	t.Run("cases", func(t *testing.T) { runAttacks(t, attacks) })
	// No timing assertion: a blocked open would hit the 10 s timeout and
	// fail as kind timeout instead of io.
	t.Logf("all FIFO cases took %v", time.Since(start))
}

// Names with unusual bytes are files like any other, named in messages as
// the script wrote them.
func TestIOAttackUnusualNames(t *testing.T) {
	t.Parallel()
	s := newScene(t)
	s.arm(t)
	names := []string{
		"with space.txt", "tab\there", "new\nline", "quote'\"", `back\slash`, "caf\u00e9.csv",
		"-dash", "...", "..hidden", "dots..", "emoji \U0001F600", "$HOME", "*glob?", strings.Repeat("n", 255),
	}
	var src strings.Builder
	src.WriteString("local names = {")
	for _, n := range names {
		src.WriteString(luauString(n) + ",")
	}
	src.WriteString(`}
		for _, n in ipairs(names) do io.open(n, "w"):write(n):close() end
		local back = 0
		for _, n in ipairs(names) do if io.open(n):read("*a") == n then back += 1 end end
		local ok, err = pcall(io.open, "missing\n\0.txt")
		local ok2, err2 = pcall(io.open, "caf\u{e9}/missing")
		local ok3, err3 = pcall(io.open, "\xff\xfe invalid utf8", "w")
		return {back = back, listed = #io.list(), err = err, err2 = err2, err3 = err3}`)
	res := runIO(t, s.dir, src.String(), luau.IO{MaxBytes: 1 << 20}, luau.Limits{})
	s.verify(t, res)
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	// Names that are not UTF-8 are refused: they could not be reported
	// unambiguously in files_touched.
	want := fmt.Sprintf(`{"back":%d,"err":"io.open: 'missing\n\u0000.txt': path contains a NUL byte","err2":"io.open: 'café/missing': no such file or directory","err3":"io.open: '%s invalid utf8': path is not valid UTF-8","listed":%d}`, len(names), "\uFFFD\uFFFD", len(names))
	if string(res.Value) != want {
		t.Errorf("result = %s\nwant     %s", res.Value, want)
	}
	if len(res.FilesTouched) != len(names) {
		t.Fatalf("%d files touched, want %d", len(res.FilesTouched), len(names))
	}
	for _, n := range names {
		fileHolds(t, filepath.Join(s.dir, n), n)
	}
}

// luauString writes s as a Luau string literal, every byte escaped.
func luauString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		fmt.Fprintf(&b, `\x%02x`, s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// The budget admits a write that reaches it exactly and refuses, whole, a
// write that would pass it, even by one byte, even when the write is made
// of several strings: the disk never holds more than the budget allowed.
func TestIOAttackWriteBudgetEdge(t *testing.T) {
	t.Parallel()
	runIOCases(t, []ioCase{
		{
			name:    "exactly the budget",
			source:  `local f = io.open("b.txt", "w") for i = 1, 10 do f:write("0123456789") end f:close() return io.open("b.txt"):seek("end")`,
			result:  `100`,
			touched: "b.txt:write:100",
		},
		{
			name:    "one byte over",
			source:  `local f = io.open("b.txt", "w") f:write(string.rep("x", 100)) f:write("y")`,
			kind:    result.Limit,
			message: "write: 'b.txt': write budget exceeded: this write of 1 bytes would bring the total to 101 bytes, over the limit of 100",
			touched: "b.txt:write:100",
		},
		{
			name:    "one byte over in one call",
			source:  `io.open("b.txt", "w"):write(string.rep("x", 101))`,
			kind:    result.Limit,
			message: "write budget exceeded",
			touched: "b.txt:write:0",
		},
		{
			name:    "a call with several strings is all or nothing",
			source:  `local f = io.open("b.txt", "w") f:write(string.rep("a", 60)) local ok, err = pcall(f.write, f, string.rep("b", 30), 12345678901) f:write(string.rep("d", 40)) f:close() return {ok, io.open("b.txt"):read("*a")}`,
			result:  `[false,"` + strings.Repeat("a", 60) + strings.Repeat("d", 40) + `"]`,
			touched: "b.txt:write:100",
		},
		{
			name:    "the budget is shared by every file and file.save",
			source:  `io.open("a.txt", "w"):write(string.rep("a", 50)):close() file.save("b.txt", string.rep("b", 30)) io.open("c.txt", "a"):write(string.rep("c", 20)):write("!")`,
			kind:    result.Limit,
			message: "write budget exceeded",
			touched: "a.txt:write:50,b.txt:write:30,c.txt:append:20",
		},
		{
			name:    "the script can catch it and go on",
			source:  `local f = io.open("b.txt", "w") local ok = pcall(f.write, f, string.rep("x", 101)) f:write("fits") f:close() return {ok, io.open("b.txt"):read("*a")}`,
			result:  `[false,"fits"]`,
			touched: "b.txt:write:4",
		},
	}, luau.IO{MaxBytes: 100})
}

// Opening and closing 10,000 files in one run: every one is reported and
// no descriptor is left open.
func TestIOAttackTenThousandFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "files")
	fdsBefore := openFDs(t)
	res := runIO(t, dir, `
		for i = 1, 10000 do
			local f = io.open("d" .. (i % 10) .. "/f" .. i .. ".txt", "w")
			f:write(i)
			f:close()
		end
		local n = 0
		for i = 1, 10000, 7 do
			local f = io.open("d" .. (i % 10) .. "/f" .. i .. ".txt")
			if f:read("*n") == i then n += 1 end
			f:close()
		end
		return n`, luau.IO{MaxBytes: 1 << 20, MaxFiles: 10010}, luau.Limits{Timeout: 60 * time.Second})
	if res.Error != nil {
		t.Fatal(res.Error)
	}
	if string(res.Value) != "1429" {
		t.Errorf("result = %s, want 1429", res.Value)
	}
	// The first 1,000 in order are reported, the rest counted.
	if len(res.FilesTouched) != 1000 || res.FilesOmitted != 9000 || res.FilesTouched[0].Name != "d0/f10.txt" {
		t.Errorf("%d files touched (first %+v), %d omitted; want 1000 and 9000", len(res.FilesTouched), res.FilesTouched[0], res.FilesOmitted)
	}
	if after := openFDs(t); after > fdsBefore+8 {
		t.Errorf("%d descriptors open after the run, %d before", after, fdsBefore)
	}
}

// Files the script drops without closing do not exhaust the handle limit:
// at the limit the collector closes the unreachable ones. Reachable files
// still count.
func TestIOAttackUnreachableHandlesAreCollected(t *testing.T) {
	t.Parallel()
	runIOCases(t, []ioCase{
		{
			name:   "dropped handles",
			source: `for i = 1, 1000 do io.open("f" .. (i % 100), "w"):write("x") end return #io.list()`,
			result: `100`,
		},
		{
			name:   "loops left early",
			source: `for i = 1, 200 do for l in io.lines("src.txt") do break end end return "ok"`,
			setup:  func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "src.txt"), "a\nb\n") },
			result: `"ok"`,
		},
		{
			name:    "reachable handles count",
			source:  `local keep = {} for i = 1, 64 do keep[i] = io.lines("src.txt") end io.open("one-more.txt", "w")`,
			setup:   func(t *testing.T, dir string) { testfile.Write(t, filepath.Join(dir, "src.txt"), "a\nb\n") },
			kind:    result.Limit,
			message: "io.open: 'one-more.txt': too many open files (at most 64",
		},
	}, luau.IO{MaxBytes: 1 << 20})
}

// Every handle is closed when the execution ends, however it ends.
func TestIOAttackHandlesClosedAtTeardown(t *testing.T) {
	for _, c := range []struct {
		name   string
		script string
		limits luau.Limits
		kind   result.Kind
	}{
		{"success", `local h = {} for i = 1, 50 do h[i] = io.open("f" .. i, "w") end`, luau.Limits{}, ""},
		{"error", `local h = {} for i = 1, 50 do h[i] = io.open("f" .. i, "w") end error("x")`, luau.Limits{}, result.Runtime},
		{"timeout", `local h = {} for i = 1, 50 do h[i] = io.open("f" .. i, "w") end while true do end`, luau.Limits{Timeout: 100 * time.Millisecond}, result.Timeout},
		{"memory", `local h = {} for i = 1, 50 do h[i] = io.open("f" .. i, "w") end local t = {} while true do t[#t+1] = {} end`, luau.Limits{HeapBytes: 4 << 20}, result.Memory},
		{"handle limit", `local h = {} for i = 1, 100 do h[i] = io.open("f" .. i, "w") end`, luau.Limits{}, result.Limit},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "files")
			res := runIO(t, dir, c.script, luau.IO{MaxBytes: 1 << 20}, c.limits)
			if (res.Error == nil) != (c.kind == "") || (res.Error != nil && res.Error.Kind != c.kind) {
				t.Fatalf("error = %v, want kind %q", res.Error, c.kind)
			}
			if open := fdsUnder(t, dir); len(open) > 0 {
				t.Errorf("files still open after the run: %v", open)
			}
		})
	}
}

// A 1 GB sparse file read whole, or as one line, under a small memory
// limit fails with kind memory, and the Go process does not buffer it.
func TestIOAttackHugeSparseFile(t *testing.T) {
	if testing.Short() {
		t.Skip("1 GB sparse file")
	}
	dir := filepath.Join(t.TempDir(), "files")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "sparse.bin"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(1 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, c := range []struct{ name, script string }{
		{"*a", `return #io.open("sparse.bin"):read("*a")`},
		{"a count", `return #io.open("sparse.bin"):read(2^30)`},
		{"a line", `return #io.open("sparse.bin"):read("*l")`},
		{"io.lines", `for l in io.lines("sparse.bin") do end`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			res := runIO(t, dir, c.script, luau.IO{MaxBytes: 1 << 20}, luau.Limits{HeapBytes: 16 << 20, Timeout: 60 * time.Second})
			runtime.ReadMemStats(&after)
			if res.Error == nil || res.Error.Kind != result.Memory {
				t.Fatalf("error = %+v, want kind memory", res.Error)
			}
			if !strings.Contains(res.Error.Message, "memory limit") {
				t.Errorf("message %q does not name the memory limit", res.Error.Message)
			}
			if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 32<<20 {
				t.Errorf("the Go heap allocated %d MiB during the run", allocated>>20)
			}
			if open := fdsUnder(t, dir); len(open) > 0 {
				t.Errorf("files still open after the run: %v", open)
			}
		})
	}
	t.Run("a chunk within the limit", func(t *testing.T) {
		res := runIO(t, dir, `local f = io.open("sparse.bin", "rb") local chunk = f:read(1048576) f:close() return #chunk`,
			luau.IO{MaxBytes: 1 << 20}, luau.Limits{HeapBytes: 16 << 20})
		if res.Error != nil || string(res.Value) != "1048576" {
			t.Errorf("reading a 1 MiB chunk: %s %+v", res.Value, res.Error)
		}
	})
}

// openFDs counts the process's open descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(entries)
}

// fdsUnder lists the process's descriptors open on files under dir.
func fdsUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && (target == real || strings.HasPrefix(target, real+"/")) {
			open = append(open, target)
		}
	}
	return open
}
