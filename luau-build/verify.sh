#!/usr/bin/env bash
# verify.sh: rebuilds wasm/luau.wasm from the pinned sources and toolchain
# and checks that the result is byte for byte the committed artifact, that
# wasm/PROVENANCE records its sha256, and that clang's output before the
# rewrite (luau-build/rewrite) has the sha256 PROVENANCE records for it.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/luau-verify.XXXXXX")
trap 'rm -rf "$out"' EXIT

"$top/luau-build/build.sh" "$out"

committed=$(sha256sum "$top/wasm/luau.wasm" | cut -d' ' -f1)
rebuilt=$(sha256sum "$out/luau.wasm" | cut -d' ' -f1)
if ! cmp -s "$top/wasm/luau.wasm" "$out/luau.wasm"; then
  echo "verify.sh: wasm/luau.wasm ($committed) differs from the rebuild ($rebuilt)" >&2
  echo "verify.sh: run luau-build/build.sh and commit wasm/ if the change is intended" >&2
  exit 1
fi
if ! grep -q "^sha256: $committed\$" "$top/wasm/PROVENANCE"; then
  echo "verify.sh: wasm/PROVENANCE does not record sha256 $committed" >&2
  exit 1
fi
clang_committed=$(sed -n 's/^clang_sha256: //p' "$top/wasm/PROVENANCE")
clang_rebuilt=$(sed -n 's/^clang_sha256: //p' "$out/PROVENANCE")
if [ -z "$clang_rebuilt" ] || [ "$clang_committed" != "$clang_rebuilt" ]; then
  echo "verify.sh: clang's output ($clang_rebuilt) is not what wasm/PROVENANCE records (${clang_committed:-nothing})" >&2
  exit 1
fi
echo "verify.sh: wasm/luau.wasm is reproducible ($committed; clang's output $clang_rebuilt)"
