#!/usr/bin/env bash
# Runs overlap-plan check, simulate and tune on a directory of Megatron-Bridge ConfigContainer
# dumps (scripts/performance/dryrun_configs/ of NVIDIA-NeMo/Megatron-Bridge, e.g. at a9497c6),
# each at the world size of its recipe and on its GPU
# from the file name, and prints one line per run: exit status, seconds, the first line of
# output. Usage: scripts/bridge_dumps.sh DUMP_DIR [OVERLAP_PLAN]
#
# World sizes: num_gpus of the recipe's WorkloadBaseConfig in scripts/performance/configs/ at
# that commit (DeepSeek-V3 256 on Blackwell, 1,024 on H100; GPT-OSS-120B 64; Llama 3 70B SFT 32;
# Llama 3 8B SFT 8; Qwen3-235B 64 for v1, 256 for v2). VR200 has no gpu_model: as --gpu says,
# it is checked and simulated as a GB300.
set -uo pipefail
dir=${1:?usage: scripts/bridge_dumps.sh DUMP_DIR [OVERLAP_PLAN]}
root=$(cd "$(dirname "$0")/.." && pwd)
tool=${2:-$root/build/rel/overlap-plan}
[ -x "$tool" ] || { echo "no overlap-plan at $tool (build it, or pass its path)" >&2; exit 2; }

world_size() {
  case $1 in
    deepseek_v3*_h100_*) echo 1024 ;;
    deepseek_v3*) echo 256 ;;
    gpt_oss_120b*) echo 64 ;;
    llama3_70b_sft*) echo 32 ;;
    llama3_8b_sft*) echo 8 ;;
    qwen3_235b*_v1*) echo 64 ;;
    qwen3_235b*_v2*) echo 256 ;;
    *) echo "" ;;
  esac
}
gpu() {
  case $1 in
    *_vr200_*) echo gb300 ;;
    *_gb300_*) echo gb300 ;;
    *_gb200_*) echo gb200 ;;
    *_b300_*) echo b300 ;;
    *_b200_*) echo b200 ;;
    *_h200_*) echo h200 ;;
    *_h100_*) echo h100 ;;
    *) echo "" ;;
  esac
}

for f in "$dir"/*.yaml; do
  name=$(basename "$f" .yaml)
  ws=$(world_size "$name")
  g=$(gpu "$name")
  if [ -z "$ws" ] || [ -z "$g" ]; then
    echo "$name: no known world size or GPU for this recipe, skipped"
    continue
  fi
  for cmd in check simulate tune; do
    start=$(date +%s%N)
    out=$("$tool" "$cmd" "$f" --world-size "$ws" --gpu "$g" --ignore-environment 2>&1)
    rc=$?
    ms=$((($(date +%s%N) - start) / 1000000))
    first=$(printf '%s\n' "$out" | grep -m1 -E '^overlap-plan (check|simulate|tune) |error:' | cut -c1-110)
    printf '%-44s %-8s ws=%-5s rc=%d %6.2f s  %s\n' "$name" "$cmd" "$ws" "$rc" "$(echo "$ms / 1000" | bc -l)" "$first"
  done
done
