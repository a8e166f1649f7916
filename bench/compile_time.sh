#!/usr/bin/env bash
# Compile-time cost of the DSL (g++ -O0, best of 3): a TU with only <boost/hana.hpp> against one
# with <overlap/overlap.hpp> and the full MoE config, and the cost of each extra distinct config
# in a TU with 20 of them. Prints one JSON object.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
cxx=${CXX:-g++}
runs=${RUNS:-3}

best_of() {  # best user+sys seconds of compiling "$@"
  local best=""
  for _ in $(seq "$runs"); do
    local t
    t=$( { /usr/bin/time -f "%U %S" "$cxx" -std=c++20 -O0 -I"$root/include" -c "$@" -o /dev/null; } 2>&1 \
         | tail -n 1 | awk '{printf "%.3f", $1 + $2}')
    if [ -z "$best" ] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a < b)}'; then best=$t; fi
  done
  echo "$best"
}

bare=$(best_of "$here/compile_time/bare_hana.cpp")
one=$(best_of -DCONFIGS=1 "$here/compile_time/configs.cpp")
twenty=$(best_of -DCONFIGS=20 "$here/compile_time/configs.cpp")
awk -v bare="$bare" -v one="$one" -v twenty="$twenty" 'BEGIN {
  extra = (twenty - one) / 19
  printf "{\"bare_hana_s\": %.3f, \"full_config_s\": %.3f, \"ratio\": %.3f, \"per_extra_config_s\": %.4f, \"per_extra_config_vs_bare\": %.3f}\n",
         bare, one, one / bare, extra, extra / bare
}'
