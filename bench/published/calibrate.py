#!/usr/bin/env python3
"""Derives, from NVIDIA's published 26.02 steps, the one constant of each Blackwell GPU that no
public measurement gives: how fast its compute kernels run through a training step against what
the preset's model gives them (sim/machine/blackwell.hpp: the B200's kernel figures and the B200's
clock drop under load, taken for all four for want of their own).

For each of b200, b300, gb200 and gb300: the factor F (overlap-plan --compute-speed, over the
preset in force) at which the median over that GPU's simulated 26.02 rows of
log(predicted / published) is 0; the median, so that a row whose miss has another cause (a
host-bound run, a link) does not move the GPU's constant. Found by the secant method on log F
(the ratio grows with F), within BOUNDS. The 25.11 and 25.09 rows are never read here: they are
the held-out check of the result (bench/published/run.py with the presets updated).

The factor is the product of the two unknowns: the sustained SM clock over the assumed one
(at most max / sustained = 1965 / 1580 = 1.24, the GPU at its boost clock throughout) and the
kernels' achieved fraction of peak over the B200's figures (GEMMs at 0.631 of peak: at most about
0.85 / 0.631 = 1.35). A factor beyond their product, 1.68, would say the miss is not compute.

Usage: bench/published/calibrate.py [--tool OVERLAP_PLAN] [--gpus b200,b300,gb200,gb300] [--jobs N]
Prints one JSON object: per GPU the factor, the rows and their ratios at it, and each step taken.
"""
import argparse
import json
import math
import os
import statistics
import sys

import run

RELEASE = "26.02"
BOUNDS = (0.5, 2.0)
PHYSICAL_MOST = 1965 / 1580 * 0.85 / 0.631
TOLERANCE = 0.005  # in median log ratio: half a percent
MOST_STEPS = 8


def median_of(records):
    ratios = {f'{r["model"]} {r["precision"]}': r.get("ratio") for r in records}
    return statistics.median(math.log(x) for x in ratios.values() if x), ratios


def median_log_ratio(tool, rows, jobs, factor):
    return median_of(run.run_rows(tool, rows, jobs, ["--compute-speed", f"{factor:.6g}"]))


def calibrate(tool, gpu, jobs):
    rows = [r for r in run.all_rows() if r["release"] == RELEASE and r["gpu"] == gpu]
    first = run.run_rows(tool, rows, jobs)
    used = [row for row, rec in zip(rows, first) if rec["status"] == "simulated"]
    out = {"rows_used": len(used), "rows_left_out": {f'{r["model"]} {r["precision"]}': r.get("reason", r["status"])
                                                      for r in first if r["status"] != "simulated"}}
    if not used:
        return out
    steps = []
    x0, (g0, ratios) = 0.0, median_of([r for r in first if r["status"] == "simulated"])
    steps.append({"factor": 1.0, "median_log_ratio": round(g0, 4)})
    x1 = max(math.log(BOUNDS[0]), min(math.log(BOUNDS[1]), -g0))  # as if the step were all compute
    for _ in range(MOST_STEPS):
        if abs(g0) < TOLERANCE:
            break
        g1, ratios = median_log_ratio(tool, used, jobs, math.exp(x1))
        steps.append({"factor": round(math.exp(x1), 4), "median_log_ratio": round(g1, 4)})
        if abs(g1) < TOLERANCE or g1 == g0:
            x0, g0 = x1, g1
            break
        x0, x1, g0 = x1, x1 - g1 * (x1 - x0) / (g1 - g0), g1
        x1 = max(math.log(BOUNDS[0]), min(math.log(BOUNDS[1]), x1))
        if x1 == x0:  # at a bound
            break
    factor = math.exp(x0)
    out.update(factor=round(factor, 3), median_log_ratio=round(g0, 4), at_bound=any(abs(x0 - math.log(b)) < 1e-9 for b in BOUNDS),
               beyond_physical=factor > PHYSICAL_MOST, ratios=ratios, steps=steps)
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tool", default=os.environ.get("OVERLAP_PLAN", "overlap-plan"), help="the overlap-plan binary")
    p.add_argument("--gpus", default="b200,b300,gb200,gb300")
    p.add_argument("--jobs", type=int, default=2)
    a = p.parse_args()
    result = {"calibration": "blackwell compute", "release": RELEASE, "bounds": BOUNDS,
              "physical_most": round(PHYSICAL_MOST, 3),
              "gpus": {g: calibrate(a.tool, g, a.jobs) for g in a.gpus.split(",")}}
    json.dump(result, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
