# Makefile: the performance comparison and the builds it needs.
#
#   make bench    builds the native harness, then compares wasm (wazero),
#                 v8 (the same module under node), native, gopher-lua and
#                 lua5.1 on tests/bench/scripts in one run
#                 (BENCH_FLAGS are passed on, e.g. BENCH_FLAGS='-n 9')
#   make native   builds bin/luau-native (luau-build/native/build.sh)
#   make wasm     rebuilds wasm/luau.wasm (luau-build/build.sh)
#   make gobench  the Go benchmarks of tests/bench

GO ?= go
BENCH_FLAGS ?=

NATIVE_INPUTS := $(wildcard luau-build/native/*.cpp luau-build/native/*.sh \
	luau-build/shim/* luau-build/patches/*.patch) luau-build/source.sh luau-build/Cargo.toml luau-build/Cargo.lock

.PHONY: bench native wasm gobench

# Without a compiler the native build fails; the comparison still runs and
# says that it skipped the native columns.
bench:
	@$(MAKE) --no-print-directory native || echo "make bench: the native build failed (above); comparing without it" >&2
	$(GO) run ./tests/bench/cmd/compare $(BENCH_FLAGS)

native: bin/luau-native

bin/luau-native: $(NATIVE_INPUTS)
	luau-build/native/build.sh $@

wasm:
	luau-build/build.sh

gobench:
	$(GO) test -run '^$$' -bench . -benchtime 5x ./tests/bench
