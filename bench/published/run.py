#!/usr/bin/env python3
"""Simulates every published Megatron-Bridge pre-training run of rows.json with overlap-plan and
prints one JSON object: per row the predicted and the published tokens/s/GPU, their ratio, the
exposed communication per family and the peak memory (and its components) against what a rank
may take; then, per release, how many rows fall within x0.8-1.25 and the geometric mean of the
ratios. 26.02 is what the model may be calibrated on (calibrate.py); 25.11 and 25.09 are held out
(never fitted to).

A row is turned into a simulation as ../shared/reference/published-throughput.md says: the dump
of the same model (of the same GPU where one exists) with the row's parallel sizes, batch,
sequence length and precision as overrides, its GPU as --gpu, its GPUs as --world-size. A row
the tool cannot run (a feature it does not model, a plan too large for this machine) is listed
with the tool's reason, never dropped.

Usage: bench/published/run.py [--tool OVERLAP_PLAN] [--only REGEX] [--jobs N]
"""
import argparse
import concurrent.futures
import json
import math
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
DUMPS = HERE.parent.parent / "data" / "bridge-dumps"
BAND = (0.8, 1.25)
# What one simulation may take here: the CI machine has 2 cores and 24 GiB, and runs two at once.
MEMORY_LIMIT_BYTES = 8 << 30
TIME_LIMIT_S = 300

# The dump each (model, GPU) starts from: the same GPU's where one exists, else the nearest
# recipe's (its overlap settings and dispatcher are the recipe's; the row's sizes override).
DUMP = {
    ("llama3_8b", None): "llama3_8b_sft_gb200_fp8_mx_v1.yaml",
    ("llama3_70b", "gb300"): "llama3_70b_sft_gb300_fp8_mx_v1.yaml",
    ("llama3_70b", None): "llama3_70b_sft_gb200_fp8_mx_v1.yaml",
    ("llama31_405b", "gb300"): "llama3_70b_sft_gb300_fp8_mx_v1.yaml",
    ("llama31_405b", None): "llama3_70b_sft_gb200_fp8_mx_v1.yaml",
    ("deepseek_v3", "b300"): "deepseek_v3_pretrain_b300_nvfp4_v1.yaml",
    ("deepseek_v3", "b200"): "deepseek_v3_pretrain_b200_nvfp4_v2.yaml",
    ("deepseek_v3", "h100"): "deepseek_v3_pretrain_h100_fp8_sc_v1.yaml",
    ("deepseek_v3", None): "deepseek_v3_pretrain_gb200_nvfp4_v1.yaml",
    ("gpt_oss_120b", "h100"): "gpt_oss_120b_pretrain_h100_fp8_mx_v2.yaml",
    ("gpt_oss_120b", "b200"): "gpt_oss_120b_pretrain_b200_fp8_mx_v2.yaml",
    ("gpt_oss_120b", "b300"): "gpt_oss_120b_pretrain_b300_fp8_mx_v2.yaml",
    ("gpt_oss_120b", None): "gpt_oss_120b_pretrain_gb200_fp8_mx_v2.yaml",
    ("qwen3_235b", "gb300"): "qwen3_235b_a22b_pretrain_gb300_nvfp4_v2.yaml",
    ("qwen3_235b", "b300"): "qwen3_235b_a22b_pretrain_b300_nvfp4_v2.yaml",
    ("qwen3_235b", "b200"): "qwen3_235b_a22b_pretrain_b200_nvfp4_v1.yaml",
    ("qwen3_235b", None): "qwen3_235b_a22b_pretrain_gb200_nvfp4_v2.yaml",
    ("qwen3_30b_a3b", None): "qwen3_235b_a22b_pretrain_gb200_nvfp4_v2.yaml",
}

# Architectures run from another model's dump (their Hugging Face configs).
ARCHITECTURE = {
    # Llama-3.1-405B: the Llama dump with its sizes; the embedding and the loss count as layers
    # in the pipeline split, as Bridge's 405B recipes set (126 + 2 layers over pp x vp chunks).
    "llama31_405b": {
        "model.num_layers": 126, "model.hidden_size": 16384, "model.ffn_hidden_size": 53248,
        "model.num_attention_heads": 128, "model.num_query_groups": 8, "model.kv_channels": 128,
        "model.account_for_embedding_in_pipeline_split": "true",
        "model.account_for_loss_in_pipeline_split": "true",
    },
    # Qwen3-30B-A3B: the Qwen3-235B dump with its sizes (48 layers, 128 experts of 768, top 8);
    # its recipes split the 48 layers alone (pp2 vp12: 2 a chunk).
    "qwen3_30b_a3b": {
        "model.account_for_embedding_in_pipeline_split": "false",
        "model.account_for_loss_in_pipeline_split": "false",
        "model.num_layers": 48, "model.hidden_size": 2048, "model.ffn_hidden_size": 6144,
        "model.num_attention_heads": 32, "model.num_query_groups": 4, "model.kv_channels": 128,
        "model.moe_ffn_hidden_size": 768,
    },
}

# DeepSeek-V3's 61 layers (and its MTP layer) over pp x vp chunks, as its recipes lay them out.
DEEPSEEK_LAYOUT = {8: "Et*8|(t*8|)*6t*5mL", 16: "Et*4|(t*4|)*14tmL", 32: "Et|(tt|)*30mL"}

PRECISION = {
    "BF16": {"mixed_precision.fp8": "null", "mixed_precision.fp4": "null",
             "mixed_precision.fp8_param": "false", "mixed_precision.fp8_param_gather": "false"},
    "FP8-CS": {"mixed_precision.fp8": "hybrid", "mixed_precision.fp8_recipe": "tensorwise",
               "mixed_precision.fp4": "null"},
    "FP8-MX": {"mixed_precision.fp8": "e4m3", "mixed_precision.fp8_recipe": "mxfp8",
               "mixed_precision.fp4": "null"},
    "NVFP4": {"mixed_precision.fp8": "null", "mixed_precision.fp4": "e2m1", "mixed_precision.fp4_recipe": "nvfp4",
              "mixed_precision.fp8_param": "false", "mixed_precision.fp8_param_gather": "false"},
}


def dump_of(row):
    return DUMP.get((row["model"], row["gpu"])) or DUMP[(row["model"], None)]


def has_key(tree, dotted):
    """Whether the dump holds `dotted` (a.b or a.b.c)."""
    for part in dotted.split("."):
        if not isinstance(tree, dict) or part not in tree:
            return False
        tree = tree[part]
    return True


def overrides_of(row, tree):
    """The Hydra overrides that turn the dump into the row's run."""
    tp, pp, cp = row["tp"], row["pp"], row["cp"]
    o = {
        "model.tensor_model_parallel_size": tp,
        "model.pipeline_model_parallel_size": pp,
        "model.virtual_pipeline_model_parallel_size": row["vp"] if row["vp"] else "null",
        "model.context_parallel_size": cp,
        "model.expert_model_parallel_size": row["ep"] or 1,
        "model.sequence_parallel": "true" if tp > 1 else "false",
        "comm_overlap.tp_comm_overlap": "true" if tp > 1 else "false",
        "train.global_batch_size": row["gbs"],
        "train.micro_batch_size": row["mbs"],
        "model.seq_length": row["seq"],
        "ddp.use_megatron_fsdp": "true" if row["fsdp"] else "false",
        # Every performance recipe of the three releases reduces gradients in bf16: Bridge's
        # scripts/performance/configs/<model>/*_llm_pretrain.py set_*_common_configs set both to
        # false (df0289c for 26.02, da5a1be for 25.11; cac49dc's YAML configs for 25.09), where
        # some dumps keep mixed_precision's default true.
        "mixed_precision.grad_reduce_in_fp32": "false",
        "ddp.grad_reduce_in_fp32": "false",
    }
    for key in ("dataset.sequence_length", "dataset.seq_length", "dataset.packed_sequence_specs.packed_sequence_size"):
        if has_key(tree, key):
            o[key] = row["seq"]
    if pp == 1 and has_key(tree, "comm_overlap.defer_embedding_wgrad_compute"):
        o["comm_overlap.defer_embedding_wgrad_compute"] = "false"  # upstream refuses it without pp (PP-13)
    o.update(ARCHITECTURE.get(row["model"], {}))
    o.update(PRECISION[row["precision"]])
    if row["model"] == "deepseek_v3":
        chunks = pp * (row["vp"] or 1)
        layout = DEEPSEEK_LAYOUT.get(chunks)
        if row.get("variant") == "w/o MTP":
            o["model.mtp_num_layers"] = "null"
            layout = layout and layout.replace("m", "")
        if layout:
            o["model.pipeline_model_parallel_layout"] = layout
    # A key the dump lacks is added (+), one it holds is set.
    return [("" if has_key(tree, k) else "+") + f"{k}={v}" for k, v in o.items()]


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))


def first_error(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    for l in lines:
        if "error" in l or "not modelled" in l or "cannot" in l:
            return l.strip()
    return lines[-1].strip() if lines else "no output"


def run_row(tool, row, extra=()):
    """Simulates `row`; `extra`: more options for overlap-plan simulate (calibrate.py's)."""
    dump = DUMPS / dump_of(row)
    tree = yaml.safe_load(dump.read_text())
    args = [tool, "simulate", str(dump), "--json", "--world-size", str(row["gpus"]), "--gpu", row["gpu"], *extra]
    args += overrides_of(row, tree)
    record = {k: row[k] for k in ("release", "gpu", "model", "gpus", "precision", "gbs", "mbs", "seq")}
    record["parallel"] = " ".join(f"{k}{row[k]}" for k in ("fsdp", "tp", "pp", "cp", "vp", "ep") if row[k])
    if row.get("variant"):
        record["variant"] = row["variant"]
    record["dump"] = dump.name
    record["published_tokens_per_gpu"] = row["tokens_per_gpu"]
    start = time.monotonic()
    try:
        run = subprocess.run(args, capture_output=True, text=True, timeout=TIME_LIMIT_S, preexec_fn=limit_memory)
    except subprocess.TimeoutExpired:
        record.update(status="not_run", reason=f"planning took over {TIME_LIMIT_S} s on this machine")
        return record
    record["seconds"] = round(time.monotonic() - start, 1)
    if run.returncode != 0:
        why = first_error(run.stderr)
        if run.returncode < 0 or "bad_alloc" in run.stderr:
            why = f"planning needs over {MEMORY_LIMIT_BYTES >> 30} GiB here ({why})"
        record.update(status="not_run", exit=run.returncode, reason=why)
        return record
    out = json.loads(run.stdout)
    step_us = out["overlap"]["step_time_us"]
    predicted = row["gbs"] * row["seq"] / (step_us * 1e-6 * row["gpus"])
    memory = out["memory"]
    record.update(
        status="simulated",
        predicted_tokens_per_gpu=round(predicted, 1),
        ratio=round(predicted / row["tokens_per_gpu"], 3),
        step_ms=round(step_us / 1e3, 1),
        step_ms_without_overlap=round(out["baseline"]["step_time_us"] / 1e3, 1),
        exposed_ms={f: round(v / 1e3, 1) for f, v in out["overlap"]["exposed_comm_us"].items()},
        peak_memory_gb=round(memory["overlap"]["peak_bytes"] / 1e9, 1),
        memory_at_peak_gb={k.removesuffix("_bytes"): round(v / 1e9, 1)
                           for k, v in memory["overlap"]["at_peak"].items()},
        memory_limit_gb=round(memory["limit_bytes"] / 1e9, 2),
        fits=memory["fits"],
    )
    return record


def run_rows(tool, rows, jobs, extra=()):
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        return list(pool.map(lambda r: run_row(tool, r, extra), rows))


def all_rows():
    return json.loads((HERE / "rows.json").read_text())["rows"]


def summary(records):
    out = {}
    for release in sorted({r["release"] for r in records}, reverse=True):
        rows = [r for r in records if r["release"] == release]
        ratios = [r["ratio"] for r in rows if r["status"] == "simulated"]
        out[release] = {
            "rows": len(rows),
            "simulated": len(ratios),
            "in_band": sum(BAND[0] <= x <= BAND[1] for x in ratios),
            "geometric_mean": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 3) if ratios else None,
            "held_out": release != "26.02",
        }
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tool", default=os.environ.get("OVERLAP_PLAN", "overlap-plan"), help="the overlap-plan binary")
    p.add_argument("--only", default="", help="a regex over 'release gpu model precision'")
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    rows = [r for r in all_rows() if re.search(a.only, f'{r["release"]} {r["gpu"]} {r["model"]} {r["precision"]}')]
    records = run_rows(a.tool, rows, a.jobs)
    json.dump({"bench": "published", "band": BAND, "records": records, "summary": summary(records)}, sys.stdout,
              indent=1)
    print()


if __name__ == "__main__":
    main()
