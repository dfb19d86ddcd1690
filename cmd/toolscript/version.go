package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/wasm"
)

func versionCommand() *cli.Command {
	return &cli.Command{
		Name:         "version",
		Usage:        "print the versions of toolscript, Go, wazero and Luau",
		OnUsageError: usageError,
		Action: func(c *cli.Context) error {
			if c.NArg() > 0 {
				return usagef("version takes no arguments")
			}
			fmt.Fprintf(c.App.Writer, "toolscript %s\n", version)
			fmt.Fprintf(c.App.Writer, "go %s\n", runtime.Version())
			fmt.Fprintf(c.App.Writer, "wazero %s\n", moduleVersion("github.com/tetratelabs/wazero"))
			fmt.Fprintf(c.App.Writer, "luau %s (%s, wasm sha256 %s)\n",
				wasm.ProvenanceField("luau_release"), wasm.ProvenanceField("source_crate"), wasm.ProvenanceField("sha256"))
			return nil
		},
	}
}

func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == path {
			return dep.Version
		}
	}
	return "unknown"
}
