module github.com/toolscript/toolscript

go 1.25.0

require (
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/tetratelabs/wazero v1.12.0
	github.com/yuin/gopher-lua v1.1.2
	golang.org/x/sys v0.44.0
)

require golang.org/x/text v0.14.0 // indirect
