#!/usr/bin/env bash
# build.sh: builds wasm/luau.wasm (upstream Luau plus the toolscript shim, as a
# WASI reactor) and writes wasm/PROVENANCE.
#
# clang links the module; luau-build/rewrite (Go, internal/wasmrewrite) then
# rewrites its bytes so that its function table is filled on demand, which
# is the module committed. PROVENANCE records the sha256 of both.
#
# Luau's source comes from the luau0-src crate on crates.io, pinned by exact
# version in luau-build/Cargo.toml and by checksum in luau-build/Cargo.lock;
# cargo fetches and verifies it. Only its upstream directories are compiled.
# Nothing is installed here: a missing tool is named and the build stops.
#
# Usage: luau-build/build.sh [OUTPUT_DIR]   (default: wasm/)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out_dir=${1:-$top/wasm}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

CLANG=${CLANG:-clang++-19}
GO=${GO:-go}
WASM_OPT=${WASM_OPT:-wasm-opt}
. "$here/source.sh"
wasm_toolchain build.sh

# Fetch the pinned crate, copy its upstream directories into a scratch
# tree and apply our patches (source.sh).
work=$(mktemp -d "${TMPDIR:-/tmp}/luau-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
luau_source "$here" "$work" build.sh
crate_version=$(basename "$crate_dir" | sed 's/^luau0-src-//')
crate_checksum=$(awk '/name = "luau0-src"/{f=1} f&&/checksum/{gsub(/"/,"",$3); print $3; exit}' "$here/Cargo.lock")
luau_release=${crate_version##*+luau}

# -O2: -O3 and wasm-opt gained nothing measurable (see README). The prefix
# maps keep the scratch directory's name out of the output.
cflags=(
  --target=wasm32-wasi -O2 -std=c++17 -DNDEBUG
  -DTOOLSCRIPT_HOST_UNWIND -DLUA_USE_LONGJMP=0 -D_WASI_EMULATED_PROCESS_CLOCKS
  -fvisibility=hidden -ffunction-sections -fdata-sections
  -mbulk-memory -msign-ext -mnontrapping-fptoint -mmutable-globals
  "-ffile-prefix-map=$work=." "-ffile-prefix-map=$here=."
  -I "$here/shim"
)
for c in "${components[@]}"; do cflags+=(-I "$work/src/$c/include"); done
# The shim reads a few VM internals (table sizes, luaD_throw).
cflags+=(-I "$work/src/VM/src")

sources=()
for c in "${components[@]}"; do
  while IFS= read -r f; do sources+=("$f"); done < <(find "$work/src/$c/src" -name '*.cpp' | LC_ALL=C sort)
done
for f in "$here"/shim/*.cpp; do sources+=("$f"); done

mkdir -p "$work/obj"
export CLANG work
printf '%s\n' "${sources[@]}" | nl -ba -w4 -s' ' | xargs -P "$(nproc)" -L1 bash -c '
  "$CLANG" '"$(printf '%q ' "${cflags[@]}")"' -c "$1" -o "$work/obj/$0.o"' >&2

ldflags=(
  --target=wasm32-wasi -mexec-model=reactor
  -Wl,--export=__stack_pointer -Wl,--stack-first -Wl,-z,stack-size=1048576
  -Wl,--gc-sections -Wl,--strip-debug -lwasi-emulated-process-clocks
)
objects=()
while IFS= read -r o; do objects+=("$o"); done < <(ls "$work/obj"/*.o | LC_ALL=C sort)
"$CLANG" "${ldflags[@]}" "${objects[@]}" -o "$work/luau.wasm"

optimiser="none"
if [ "${TOOLSCRIPT_WASM_OPT:-0}" = 1 ]; then
  "$WASM_OPT" -O2 --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
    --enable-mutable-globals "$work/luau.wasm" -o "$work/luau.opt.wasm"
  mv "$work/luau.opt.wasm" "$work/luau.wasm"
  optimiser="$("$WASM_OPT" --version) -O2"
fi

# The function table filled on demand: see docs/architecture.md.
clang_sum=$(sha256sum "$work/luau.wasm" | cut -d' ' -f1)
(cd "$top" && "$GO" run ./luau-build/rewrite "$work/luau.wasm" "$work/luau.lazy.wasm")

cp "$work/luau.lazy.wasm" "$out_dir/luau.wasm"
sum=$(sha256sum "$out_dir/luau.wasm" | cut -d' ' -f1)
{
  echo "# Provenance of wasm/luau.wasm (written by luau-build/build.sh)"
  echo "luau_release: 0.$luau_release"
  echo "source_crate: luau0-src $crate_version (crates.io)"
  echo "source_crate_sha256: $crate_checksum"
  echo "source_directories: ${components[*]}"
  echo "patches: $(cd "$here/patches" && ls *.patch | tr '\n' ' ')"
  wasm_toolchain_versions
  echo "optimiser: $optimiser"
  echo "cflags: $(printf '%s ' "${cflags[@]}" | sed "s|$work|\$WORK|g; s|$here|luau-build|g")"
  echo "ldflags: ${ldflags[*]}"
  echo "clang_size_bytes: $(stat -c %s "$work/luau.wasm")"
  echo "clang_sha256: $clang_sum"
  echo "rewrite: luau-build/rewrite (internal/wasmrewrite.LazyTable: the function table filled on demand)"
  echo "size_bytes: $(stat -c %s "$out_dir/luau.wasm")"
  echo "sha256: $sum"
} > "$out_dir/PROVENANCE"
echo "build.sh: wrote $out_dir/luau.wasm ($sum)" >&2
