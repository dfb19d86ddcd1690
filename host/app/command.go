package app

import (
	"io"

	"github.com/toolscript/toolscript/host/config"
	"github.com/toolscript/toolscript/host/contract/effects"
	"github.com/toolscript/toolscript/host/lint"
	"github.com/toolscript/toolscript/host/sdk/sdkdocs"
	"github.com/toolscript/toolscript/wasm"
)

// What the command line (cmd/toolscript) fills in and reads, named here so
// that it needs this package and no other: the flags and settings are
// host/config's, the lint sources and formats host/lint's, the docs
// host/sdk/sdkdocs'. Each name is its package's own (an alias, not a copy).
type (
	// ConfigFile is a parsed configuration file (LoadConfig).
	ConfigFile = config.File
	// Flags are the flags run and serve take alike.
	Flags = config.Flags
	// SDKFlags are the flags that configure the sdk.
	SDKFlags = config.SDKFlags
	// ServerFlags are serve's limits.
	ServerFlags = config.ServerFlags
	// HostedFlags are serve's flags of the hosted mode.
	HostedFlags = config.HostedFlags
	// AuthFlags are the hosted mode's token settings.
	AuthFlags = config.Auth
	// LintFlags are lint's flags.
	LintFlags = config.LintFlags
	// Settings are the resolved settings of run and serve.
	Settings = config.Settings
	// Mode is how scripts are run: by run, by serve over stdio, or hosted.
	Mode = config.Mode
	// SDKDocs are the sdk's docs (Docs).
	SDKDocs = sdkdocs.Docs
	// Plan is a dry run's effects a --plan run is held to (ReadPlanFile).
	Plan = effects.Approved
)

// The modes.
const (
	ModeRun    = config.Run
	ModeStdio  = config.Stdio
	ModeHosted = config.Hosted
)

// The lint formats, and how standard input is named.
const (
	LintText         = lint.FormatText
	LintJSON         = lint.FormatJSON
	LintSARIF        = lint.FormatSARIF
	LintStdinPath    = lint.StdinPath
	LintStdinName    = lint.DefaultStdinName
	SDKURIPrefix     = sdkdocs.URIPrefix
	SDKSearchResults = sdkdocs.DefaultSearchLimit
)

// Resolve resolves the configuration file, flags and environment of run
// and serve for mode (config.Resolve).
func Resolve(f *ConfigFile, flags Flags, getenv func(string) string, mode Mode) (Settings, error) {
	return config.Resolve(f, flags, getenv, mode)
}

// ResolveServer resolves serve's limits (config.ResolveServer).
func ResolveServer(f *ConfigFile, flags ServerFlags) (config.ServerSettings, error) {
	return config.ResolveServer(f, flags)
}

// ResolveLint resolves lint's settings (config.ResolveLint).
func ResolveLint(f *ConfigFile, flags LintFlags) config.LintSettings {
	return config.ResolveLint(f, flags)
}

// ReadPlanFile reads the plan --plan names: a dry run's JSON result or its
// "effects".
func ReadPlanFile(name string) (*Plan, error) { return effects.ReadPlanFile(name) }

// LintFormats are the names of the lint output formats.
func LintFormats() []string { return lint.Formats() }

// ParseLintFormat returns the lint format name names.
func ParseLintFormat(name string) (lint.Format, error) { return lint.ParseFormat(name) }

// CollectLintSources reads the scripts paths name (lint.Collect).
func CollectLintSources(paths []string, stdin io.Reader, stdinName string) ([]lint.Source, error) {
	return lint.Collect(paths, stdin, stdinName)
}

// WriteLint writes report in format, its tool named toolscript at version.
func WriteLint(w io.Writer, format lint.Format, report *lint.Report, version string) error {
	return lint.Write(w, format, report, lint.Tool{Name: "toolscript", Version: version})
}

// CheckSearchQuery reports whether query can be searched for
// (sdkdocs.CheckQuery).
func CheckSearchQuery(query string) error { return sdkdocs.CheckQuery(query) }

// LuauVersion is the embedded Luau module's release, source and hash, as
// `toolscript version` shows them.
func LuauVersion() string {
	return wasm.ProvenanceField("luau_release") + " (" + wasm.ProvenanceField("source_crate") + ", wasm sha256 " + wasm.ProvenanceField("sha256") + ")"
}
