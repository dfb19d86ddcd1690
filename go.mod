module github.com/toolscript/toolscript

go 1.25.0

require (
	github.com/tetratelabs/wazero v1.12.0
	golang.org/x/sys v0.44.0
)
