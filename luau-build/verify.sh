#!/usr/bin/env bash
# verify.sh: rebuilds wasm/luau.wasm from the pinned sources and toolchain
# and checks that the result is byte for byte the committed artifact, that
# wasm/PROVENANCE records its sha256, and that clang's output before the
# rewrite (luau-build/rewrite) has the sha256 PROVENANCE records for it;
# then the same for the type checker's module, wasm/check/luau-check.wasm
# (luau-build/build-check.sh).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/luau-verify.XXXXXX")
trap 'rm -rf "$out"' EXIT

# same_artifact COMMITTED REBUILT BUILDER: the rebuilt module is the
# committed one, whose PROVENANCE (beside it) records its sha256.
same_artifact() {
  local committed_file=$1 rebuilt_file=$2 builder=$3 committed rebuilt
  committed=$(sha256sum "$committed_file" | cut -d' ' -f1)
  rebuilt=$(sha256sum "$rebuilt_file" | cut -d' ' -f1)
  if ! cmp -s "$committed_file" "$rebuilt_file"; then
    echo "verify.sh: ${committed_file#$top/} ($committed) differs from the rebuild ($rebuilt)" >&2
    echo "verify.sh: run luau-build/$builder and commit $(dirname "${committed_file#$top/}")/ if the change is intended" >&2
    exit 1
  fi
  if ! grep -q "^sha256: $committed\$" "$(dirname "$committed_file")/PROVENANCE"; then
    echo "verify.sh: $(dirname "${committed_file#$top/}")/PROVENANCE does not record sha256 $committed" >&2
    exit 1
  fi
}

"$top/luau-build/build.sh" "$out"
same_artifact "$top/wasm/luau.wasm" "$out/luau.wasm" build.sh
clang_committed=$(sed -n 's/^clang_sha256: //p' "$top/wasm/PROVENANCE")
clang_rebuilt=$(sed -n 's/^clang_sha256: //p' "$out/PROVENANCE")
if [ -z "$clang_rebuilt" ] || [ "$clang_committed" != "$clang_rebuilt" ]; then
  echo "verify.sh: clang's output ($clang_rebuilt) is not what wasm/PROVENANCE records (${clang_committed:-nothing})" >&2
  exit 1
fi
echo "verify.sh: wasm/luau.wasm is reproducible ($(sha256sum "$out/luau.wasm" | cut -d' ' -f1); clang's output $clang_rebuilt)"

"$top/luau-build/build-check.sh" "$out/check"
same_artifact "$top/wasm/check/luau-check.wasm" "$out/check/luau-check.wasm" build-check.sh
echo "verify.sh: wasm/check/luau-check.wasm is reproducible ($(sha256sum "$out/check/luau-check.wasm" | cut -d' ' -f1))"
