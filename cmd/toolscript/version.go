package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/urfave/cli/v2"

	"github.com/toolscript/toolscript/host/app"
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
			fmt.Fprintf(c.App.Writer, "toolscript %s\n", toolscriptVersion())
			fmt.Fprintf(c.App.Writer, "go %s\n", runtime.Version())
			fmt.Fprintf(c.App.Writer, "wazero %s\n", moduleVersion("github.com/tetratelabs/wazero"))
			fmt.Fprintf(c.App.Writer, "luau %s\n", app.LuauVersion())
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

// toolscriptVersion is the version this binary reports (`toolscript
// version`, serverInfo.version, lint's SARIF driver).
func toolscriptVersion() string {
	info, ok := debug.ReadBuildInfo()
	return resolveVersion(version, info, ok)
}

// resolveVersion picks the version: the one set with -ldflags, else the main
// module's version from the build info (a binary built by `go install
// github.com/toolscript/toolscript/cmd/toolscript@v1.2.3` has v1.2.3, one
// built in a git checkout a pseudo-version), else "dev".
func resolveVersion(ldflags string, info *debug.BuildInfo, ok bool) string {
	if ldflags != "" {
		return ldflags
	}
	if ok && info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "dev"
}
