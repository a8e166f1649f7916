#!/usr/bin/env bash
# Fails when a C++ or CUDA source of the tree differs from .clang-format (clang-format 14, the
# version whose output the tree holds). With --fix, formats them in place instead.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
format=$(command -v clang-format-14 || true)
[ -n "$format" ] || { echo "check-format: clang-format-14 is not installed (apt-get install clang-format-14)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.hpp' '*.cpp' '*.h' '*.cu' '*.cuh' '*.inc')
if [ "${1:-}" = "--fix" ]; then
  "$format" -i "${files[@]}"
  exit 0
fi
if ! "$format" --dry-run --Werror "${files[@]}" 2>/tmp/check-format.$$; then
  grep -E "^[^ ].*: (error|warning):" /tmp/check-format.$$ | cut -d: -f1 | sort -u | sed 's/^/  not formatted: /' >&2
  rm -f /tmp/check-format.$$
  echo "check-format: run scripts/check-format.sh --fix" >&2
  exit 1
fi
rm -f /tmp/check-format.$$
echo "check-format: ${#files[@]} files formatted as .clang-format says"
