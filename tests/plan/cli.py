#!/usr/bin/env python3
"""Runs overlap-plan and checks its exit status and output.

usage: cli.py [--exit N] [--match REGEX]... [--absent REGEX]... [--file-match FILE REGEX]...
              [--file-under FILE BYTES]... [--big FILE] [--then-check] -- overlap-plan ARGS...
--file-match   after the run, FILE (one the command writes) must match REGEX
--file-under   after the run, FILE must be smaller than BYTES
--big FILE     first writes FILE, 100 MB of YAML comments (a config far too large)
--then-check   the command is `tune ... --json`: runs `check` with the best overrides it
               prints and requires exit status 0
"""
import json, os, re, subprocess, sys

def main():
    args = sys.argv[1:]
    cut = args.index("--")
    opts, cmd = args[:cut], args[cut + 1:]
    want_exit, matches, absents, file_matches, then_check = 0, [], [], [], False
    file_limits = []
    i = 0
    while i < len(opts):
        o = opts[i]
        if o == "--exit": want_exit = int(opts[i + 1]); i += 2
        elif o == "--match": matches.append(opts[i + 1]); i += 2
        elif o == "--absent": absents.append(opts[i + 1]); i += 2
        elif o == "--file-match": file_matches.append((opts[i + 1], opts[i + 2])); i += 3
        elif o == "--file-under": file_limits.append((opts[i + 1], int(opts[i + 2]))); i += 3
        elif o == "--big":
            with open(opts[i + 1], "w") as f:
                line = "# " + "x" * 98 + "\n"
                f.write(line * 1_000_000)
            i += 2
        elif o == "--then-check": then_check = True; i += 1
        else: sys.exit(f"cli.py: unknown option {o}")
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = p.stdout + p.stderr
    ok = True
    if p.returncode != want_exit:
        print(f"exit status {p.returncode}, expected {want_exit}"); ok = False
    if p.returncode < 0 or "Sanitizer" in out:
        print("crashed"); ok = False
    for m in matches:
        if not re.search(m, out, re.M): print(f"missing: {m}"); ok = False
    for m in absents:
        if re.search(m, out, re.M): print(f"present: {m}"); ok = False
    for path, m in file_matches:
        try:
            with open(path, errors="replace") as f: text = f.read()
        except OSError as e: print(f"{path}: {e}"); ok = False; continue
        if not re.search(m, text, re.M): print(f"missing in {path}: {m}"); ok = False
    for path, limit in file_limits:
        try: size = os.path.getsize(path)
        except OSError as e: print(f"{path}: {e}"); ok = False; continue
        if size >= limit: print(f"{path}: {size} bytes, not under {limit}"); ok = False
    if ok and then_check:
        best = json.loads(p.stdout)["best_overrides"]
        tool, config = cmd[0], cmd[2]
        extra = [a for a in cmd[3:] if a not in ("--json",)]
        c = subprocess.run([tool, "check", config] + extra + best, capture_output=True, text=True)
        print(c.stdout + c.stderr)
        if c.returncode != 0: print(f"best combination: check exit {c.returncode}"); ok = False
    if not ok:
        print("---- output ----"); print(out); sys.exit(1)
    print(out[-3000:])

main()
