# source.sh: the Luau source both builds compile (luau-build/build.sh, the
# wasm module, and luau-build/native/build.sh, the native one), sourced by
# them: luau_source fetches the luau0-src crate pinned by exact version in
# luau-build/Cargo.toml and by checksum in luau-build/Cargo.lock (cargo
# verifies it), copies its upstream directories (components) into
# $work/src and applies luau-build/patches there.
#
# Usage: luau_source BUILD_DIR WORK PROG
#   BUILD_DIR  luau-build/
#   WORK       the scratch directory the source is copied into
#   PROG       the name errors start with
# Sets crate_dir (the fetched crate) and components.

components=(Ast Bytecode Common Compiler VM)

luau_source() {
  local build_dir=$1 work=$2 prog=$3
  local manifest=$build_dir/Cargo.toml
  cargo fetch --locked --manifest-path "$manifest" >&2
  crate_dir=$(cargo metadata --locked --format-version 1 --manifest-path "$manifest" |
    grep -o '"manifest_path":"[^"]*/luau0-src-[^"]*/Cargo.toml"' | head -n 1 |
    sed 's/^"manifest_path":"//; s|/Cargo.toml"$||')
  [ -d "$crate_dir/luau" ] || { echo "$prog: cargo did not fetch luau0-src" >&2; exit 1; }
  local c p
  for c in "${components[@]}"; do
    [ -d "$crate_dir/luau/$c/src" ] || { echo "$prog: $crate_dir lacks luau/$c/src" >&2; exit 1; }
    mkdir -p "$work/src/$c"
    cp -R "$crate_dir/luau/$c/include" "$crate_dir/luau/$c/src" "$work/src/$c/"
  done
  for p in "$build_dir"/patches/*.patch; do
    patch --quiet -d "$work/src" -p1 < "$p"
  done
}
