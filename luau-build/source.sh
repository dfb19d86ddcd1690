# source.sh: the Luau source the builds compile (luau-build/build.sh, the
# wasm module, luau-build/native/build.sh, the native one, and
# luau-build/build-check.sh, the checker module), sourced by them:
# luau_source fetches the luau0-src crate pinned by exact version in
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
  crate_source "$build_dir" "$work" "$prog" luau0-src "${components[@]}"
  local p
  for p in "$build_dir"/patches/*.patch; do
    patch --quiet -d "$work/src" -p1 < "$p"
  done
}

# crate_source fetches CRATE (pinned in luau-build/Cargo.toml and
# Cargo.lock) and copies the include and src directories of the upstream
# directories named after it from its luau/ into $WORK/src. Sets crate_dir.
#
# Usage: crate_source BUILD_DIR WORK PROG CRATE DIRECTORY...
crate_source() {
  local build_dir=$1 work=$2 prog=$3 crate=$4
  shift 4
  local manifest=$build_dir/Cargo.toml
  cargo fetch --locked --manifest-path "$manifest" >&2
  crate_dir=$(cargo metadata --locked --format-version 1 --manifest-path "$manifest" |
    grep -o "\"manifest_path\":\"[^\"]*/$crate-[0-9][^\"]*/Cargo.toml\"" | head -n 1 |
    sed 's/^"manifest_path":"//; s|/Cargo.toml"$||')
  [ -d "$crate_dir/luau" ] || { echo "$prog: cargo did not fetch $crate" >&2; exit 1; }
  local c
  for c in "$@"; do
    [ -d "$crate_dir/luau/$c/src" ] || { echo "$prog: $crate_dir lacks luau/$c/src" >&2; exit 1; }
    mkdir -p "$work/src/$c"
    cp -R "$crate_dir/luau/$c/include" "$crate_dir/luau/$c/src" "$work/src/$c/"
  done
}

# wasm_toolchain checks that the Debian packages a wasm32-wasi build needs
# are installed (CLANG names the compiler), and cargo, and GO when it is
# set; it names what is missing and stops the build.
#
# Usage: wasm_toolchain PROG
wasm_toolchain() {
  local prog=$1 sysroot_lib=/usr/lib/wasm32-wasi entry
  # Debian packages the build needs, and a file each one provides.
  local required=(
    "clang-19:$(command -v "$CLANG" || echo /usr/bin/$CLANG)"
    "lld-19:/usr/bin/wasm-ld-19"
    "wasi-libc:$sysroot_lib/libc.a"
    "libc++-19-dev-wasm32:$sysroot_lib/libc++.a"
    "libc++abi-19-dev-wasm32:$sysroot_lib/libc++abi.a"
    "libclang-rt-19-dev-wasm32:/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a"
  )
  local missing=()
  for entry in "${required[@]}"; do
    [ -e "${entry#*:}" ] || missing+=("${entry%%:*}")
  done
  command -v cargo >/dev/null || missing+=("cargo (rustup or Debian's cargo)")
  if [ -n "${GO:-}" ]; then
    command -v "$GO" >/dev/null || missing+=("go (the version go.mod names, for luau-build/rewrite)")
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    echo "$prog: missing: ${missing[*]}" >&2
    echo "$prog: on Debian bookworm: apt-get install clang-19 lld-19 wasi-libc libc++-19-dev-wasm32 libc++abi-19-dev-wasm32 libclang-rt-19-dev-wasm32" >&2
    exit 1
  fi
}

# wasm_toolchain_versions prints PROVENANCE's toolchain line: the versions
# of the Debian packages wasm_toolchain checks.
wasm_toolchain_versions() {
  pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }
  echo "toolchain: clang-19 $(pkgver clang-19), lld-19 $(pkgver lld-19), wasi-libc $(pkgver wasi-libc), libc++-19-dev-wasm32 $(pkgver libc++-19-dev-wasm32), libc++abi-19-dev-wasm32 $(pkgver libc++abi-19-dev-wasm32), libclang-rt-19-dev-wasm32 $(pkgver libclang-rt-19-dev-wasm32)"
}
