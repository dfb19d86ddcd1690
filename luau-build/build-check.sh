#!/usr/bin/env bash
# build-check.sh: builds wasm/check/luau-check.wasm, upstream Luau's type
# checker (Analysis and what it needs) with the shim in check-shim/, as a
# WASI reactor, and writes wasm/check/PROVENANCE.
#
# Luau's source comes from the luau-analyzer-sys crate on crates.io, pinned
# by exact version in luau-build/Cargo.toml and by checksum in
# luau-build/Cargo.lock; cargo fetches and verifies it. Only its upstream
# directories are compiled, unchanged (not the crate's Rust glue). The
# module has no wasm exceptions: a throw traps and ends the instance, which
# the host reports as an unchecked script. Debian's wasm32 libc++ has no
# threads: check-shim/nothreads.h stands in for std::mutex.
#
# Usage: luau-build/build-check.sh [OUTPUT_DIR]   (default: wasm/check/)
# JOBS (default: nproc) is how many files compile at once. The build takes
# about 12 minutes on 2 busy cores; LUAU_CHECK_WORK=DIR keeps the scratch tree
# in DIR and compiles again only the shim and the objects missing there
# (all of them when the flags changed): for work on the shim. verify.sh
# never sets it.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
out_dir=${1:-$top/wasm/check}
mkdir -p "$out_dir"
out_dir=$(cd "$out_dir" && pwd)

CLANG=${CLANG:-clang++-19}
JOBS=${JOBS:-$(nproc)}
. "$here/source.sh"
wasm_toolchain build-check.sh

# The upstream directories the type checker's Frontend needs: Analysis
# runs type functions in the VM, compiled by the Compiler.
check_components=(Common Ast Config Compiler Bytecode VM Analysis)
if [ -n "${LUAU_CHECK_WORK:-}" ]; then
  mkdir -p "$LUAU_CHECK_WORK"
  work=$(cd "$LUAU_CHECK_WORK" && pwd)
else
  work=$(mktemp -d "${TMPDIR:-/tmp}/luau-check.XXXXXX")
  trap 'rm -rf "$work"' EXIT
fi
crate_source "$here" "$work" build-check.sh luau-analyzer-sys "${check_components[@]}"
crate_version=$(basename "$crate_dir" | sed 's/^luau-analyzer-sys-//')
# The upstream tag the pinned crate vendors, unchanged.
luau_release=0.720
crate_checksum=$(awk '/name = "luau-analyzer-sys"/{f=1} f&&/checksum/{gsub(/"/,"",$3); print $3; exit}' "$here/Cargo.lock")

cflags=(
  --target=wasm32-wasi -O2 -std=c++17 -DNDEBUG
  -D_WASI_EMULATED_PROCESS_CLOCKS -D_WASI_EMULATED_MMAN
  -fvisibility=hidden -ffunction-sections -fdata-sections
  -mbulk-memory -msign-ext -mnontrapping-fptoint -mmutable-globals
  "-ffile-prefix-map=$work=." "-ffile-prefix-map=$here=."
  -include "$here/check-shim/nothreads.h"
)
for c in "${check_components[@]}"; do cflags+=(-I "$work/src/$c/include"); done

sources=()
while IFS= read -r f; do sources+=("$f"); done < <(cd "$work" && find src -name '*.cpp' | LC_ALL=C sort)
for f in "$here"/check-shim/*.cpp; do sources+=("$f"); done

mkdir -p "$work/obj"
if ! printf '%s\n' "${cflags[@]}" | cmp -s - "$work/cflags"; then
  rm -f "$work"/obj/*.o
  printf '%s\n' "${cflags[@]}" > "$work/cflags"
fi
export CLANG work
start=$(date +%s)
# Objects are named by the source's place in the sorted list; the shim's
# (absolute paths) are always compiled.
printf '%s\n' "${sources[@]}" | nl -ba -w4 -s' ' |
  while read -r n f; do [ -e "$work/obj/$n.o" ] && [ "${f#/}" = "$f" ] || echo "$n $f"; done |
  (cd "$work" && xargs -P "$JOBS" -L1 bash -c '
  "$CLANG" '"$(printf '%q ' "${cflags[@]}")"' -c "$1" -o "$work/obj/$0.o"') >&2

ldflags=(
  --target=wasm32-wasi -mexec-model=reactor
  -Wl,--stack-first -Wl,-z,stack-size=1048576
  -Wl,--gc-sections -Wl,--strip-all
  -lwasi-emulated-process-clocks -lwasi-emulated-mman
)
objects=()
while IFS= read -r o; do objects+=("$o"); done < <(ls "$work/obj"/*.o | LC_ALL=C sort)
"$CLANG" "${ldflags[@]}" "${objects[@]}" -o "$work/luau-check.wasm"
echo "build-check.sh: compiled and linked in $(( $(date +%s) - start )) s" >&2

cp "$work/luau-check.wasm" "$out_dir/luau-check.wasm"
sum=$(sha256sum "$out_dir/luau-check.wasm" | cut -d' ' -f1)
{
  echo "# Provenance of wasm/check/luau-check.wasm (written by luau-build/build-check.sh)"
  echo "luau_release: $luau_release"
  echo "source_crate: luau-analyzer-sys $crate_version (crates.io)"
  echo "source_crate_sha256: $crate_checksum"
  echo "source_directories: ${check_components[*]}"
  echo "shim: luau-build/check-shim"
  wasm_toolchain_versions
  echo "cflags: $(printf '%s ' "${cflags[@]}" | sed "s|$work|\$WORK|g; s|$here|luau-build|g")"
  echo "ldflags: ${ldflags[*]}"
  echo "size_bytes: $(stat -c %s "$out_dir/luau-check.wasm")"
  echo "sha256: $sum"
} > "$out_dir/PROVENANCE"
echo "build-check.sh: wrote $out_dir/luau-check.wasm ($sum)" >&2
