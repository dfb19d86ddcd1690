// Command rewrite is the last step of luau-build/build.sh: it reads the
// module clang linked and writes it with its function table filled on
// demand (internal/wasmrewrite.LazyTable, adding the exports named in
// package wasm), which is what wasm/luau.wasm holds.
//
//	go run ./luau-build/rewrite IN OUT
package main

import (
	"fmt"
	"os"

	"github.com/toolscript/toolscript/internal/wasmrewrite"
	"github.com/toolscript/toolscript/wasm"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: rewrite IN.wasm OUT.wasm")
		os.Exit(2)
	}
	if err := rewrite(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "rewrite:", err)
		os.Exit(1)
	}
}

func rewrite(in, out string) error {
	module, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	lazy, err := wasmrewrite.LazyTable(module, wasmrewrite.TableExports{Fill: wasm.TableFillExport, Used: wasm.TableUsedExport})
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	return os.WriteFile(out, lazy, 0o644)
}
