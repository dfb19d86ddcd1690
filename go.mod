module github.com/toolscript/toolscript

go 1.26.0

require (
	github.com/BurntSushi/toml v1.6.0
	github.com/mark3labs/mcp-go v1.2.1
	github.com/pb33f/go-yaml v0.1.1
	github.com/pb33f/libopenapi v0.42.3
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	github.com/tetratelabs/wazero v1.12.0
	github.com/urfave/cli/v2 v2.27.7
	github.com/yuin/gopher-lua v1.1.2
	golang.org/x/sys v0.44.0
	golang.org/x/text v0.14.0
)

require (
	github.com/bahlo/generic-list-go v0.2.0 // indirect
	github.com/buger/jsonparser v1.1.2 // indirect
	github.com/cpuguy83/go-md2man/v2 v2.0.7 // indirect
	github.com/google/jsonschema-go v0.4.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/pb33f/jsonpath v0.8.4 // indirect
	github.com/pb33f/ordered-map/v2 v2.3.2 // indirect
	github.com/russross/blackfriday/v2 v2.1.0 // indirect
	github.com/spf13/cast v1.7.1 // indirect
	github.com/xrash/smetrics v0.0.0-20240521201337-686a1a2994c1 // indirect
	github.com/yosida95/uritemplate/v3 v3.0.2 // indirect
	golang.org/x/sync v0.24.0 // indirect
)
