#!/usr/bin/env python3
"""Runs overlap-plan and checks its exit status and output.

A PATH names a value in the JSON the command prints on stdout: keys joined by '.', and after a
key [N] for an array's element N or [KEY=VALUE] for its one element whose KEY is VALUE
(memory.overlap.per_rank[rank=8].peak_bytes). A VALUE is JSON (true, 8, "8", [], null), or else
a string (warning, turns off).
"""
import argparse
import json
import os
import re
import subprocess
import sys


def options():
    """The parser, and the options that take one value."""
    p = argparse.ArgumentParser(prog="cli.py", usage="%(prog)s [options] -- overlap-plan ARGS...",
                                description=__doc__, allow_abbrev=False,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--exit", type=int, default=0, metavar="N", help="the exit status the command must have (0)")
    p.add_argument("--match", action="append", default=[], metavar="REGEX",
                   help="stdout and stderr together must match REGEX (multiline)")
    p.add_argument("--absent", action="append", default=[], metavar="REGEX",
                   help="stdout and stderr together must not match REGEX")
    p.add_argument("--file-match", action="append", default=[], nargs=2, metavar=("FILE", "REGEX"),
                   help="after the run, FILE (one the command writes) must match REGEX")
    p.add_argument("--file-under", action="append", default=[], nargs=2, metavar=("FILE", "BYTES"),
                   help="after the run, FILE must be smaller than BYTES")
    p.add_argument("--big", action="append", default=[], metavar="FILE",
                   help="first writes FILE, 100 MB of YAML comments (a config far too large)")
    p.add_argument("--json-equals", action="append", default=[], nargs=2, metavar=("PATH", "VALUE"),
                   help="the value at PATH must equal VALUE, of the same JSON type (true is not 1)")
    p.add_argument("--json-match", action="append", default=[], nargs=2, metavar=("PATH", "REGEX"),
                   help="the value at PATH must be a string that REGEX matches")
    p.add_argument("--json-min", action="append", default=[], nargs=2, metavar=("PATH", "NUMBER"),
                   help="the value at PATH must be a number of at least NUMBER")
    p.add_argument("--then-check", action="store_true",
                   help="the command is `tune CONFIG ... --json`: runs `check` with the best overrides it prints "
                   "and requires exit status 0")
    return p, {"--exit", "--match", "--absent", "--big"}


def parse(argv):
    p, single = options()
    cut = argv.index("--") if "--" in argv else len(argv)
    opts, cmd = argv[:cut], argv[cut + 1:]
    # argparse takes a value that starts with '-' (a regex such as "--machine") for an option and
    # stops; bound with '=', it is read as the value it is. Two-value options cannot be bound so:
    # argparse refuses such a value there, which fails the test rather than passing it.
    bound, i = [], 0
    while i < len(opts):
        if opts[i] in single and i + 1 < len(opts):
            bound.append(f"{opts[i]}={opts[i + 1]}")
            i += 2
        else:
            bound.append(opts[i])
            i += 1
    args = p.parse_args(bound)
    if not cmd: p.error("give the command after --")
    try: args.file_under = [(path, int(limit)) for path, limit in args.file_under]
    except ValueError as e: p.error(f"--file-under: {e}")
    for _, number in args.json_min:
        try: float(number)
        except ValueError: p.error(f"--json-min: not a number: {number}")
    for path, _ in args.json_equals + args.json_match + args.json_min:
        try: steps(path)
        except ValueError as e: p.error(str(e))
    return args, cmd


def literal(text):
    """A VALUE: JSON, or else the string itself."""
    try: return json.loads(text)
    except ValueError: return text


KEY, BRACKET = r"[^.\[\]]+", r"\[[^\[\]]+\]"


def steps(path):
    """PATH as keys (str), indexes (int) and selectors ((KEY, VALUE))."""
    if not re.fullmatch(rf"{KEY}(?:{BRACKET})*(?:\.{KEY}(?:{BRACKET})*)*", path):
        raise ValueError(f"{path}: not a PATH (keys joined by '.', each with [N] or [KEY=VALUE] after)")
    out = []
    for key, sub in re.findall(rf"(?:^|\.)({KEY})|\[([^\[\]]+)\]", path):
        if key: out.append(key)
        elif re.fullmatch(r"[0-9]+", sub): out.append(int(sub))
        elif "=" in sub: name, value = sub.split("=", 1); out.append((name, literal(value)))
        else: raise ValueError(f"{path}: [{sub}] is neither [N] nor [KEY=VALUE]")
    return out


def same(a, b):
    """JSON equality: Python's == takes true for 1 and 1 for 1.0; JSON's types keep true apart."""
    if isinstance(a, bool) or isinstance(b, bool): return type(a) is type(b) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)): return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return type(a) is type(b) and a == b


def lookup(doc, path):
    """The value at PATH; raises LookupError saying where the path leaves the document."""
    value, walked = doc, ""
    for step in steps(path):
        if isinstance(step, str):
            if not isinstance(value, dict) or step not in value:
                raise LookupError(f"{path}: {walked or 'the document'} has no key {step!r}")
            value, walked = value[step], f"{walked}.{step}" if walked else step
        elif isinstance(step, int):
            if not isinstance(value, list) or step >= len(value):
                raise LookupError(f"{path}: {walked} has no element {step}")
            value, walked = value[step], f"{walked}[{step}]"
        else:
            key, want = step
            found = [e for e in value if isinstance(e, dict) and key in e and same(e[key], want)] \
                if isinstance(value, list) else []
            if len(found) != 1:
                raise LookupError(f"{path}: {walked} has {len(found)} elements with {key} = {json.dumps(want)}, not 1")
            value, walked = found[0], f"{walked}[{key}={json.dumps(want)}]"
    return value


def json_problems(args, stdout):
    checks = [(path, "equals", value) for path, value in args.json_equals] + \
             [(path, "match", regex) for path, regex in args.json_match] + \
             [(path, "min", number) for path, number in args.json_min]
    if not checks: return []
    try: doc = json.loads(stdout)
    except ValueError as e: return [f"stdout is not JSON: {e}"]
    problems = []
    for path, how, want in checks:
        try: value = lookup(doc, path)
        except LookupError as e: problems.append(str(e)); continue
        shown = json.dumps(value)
        if how == "equals" and not same(value, literal(want)):
            problems.append(f"{path} is {shown}, not {json.dumps(literal(want))}")
        elif how == "match" and not (isinstance(value, str) and re.search(want, value)):
            problems.append(f"{path} is {shown}, not a string matching {want}")
        elif how == "min" and not (isinstance(value, (int, float)) and not isinstance(value, bool)
                                   and value >= float(want)):
            problems.append(f"{path} is {shown}, not a number of at least {want}")
    return problems


def then_check(cmd, stdout):
    """Runs `check` with the best overrides that `tune --json` printed; the problems found."""
    try:
        doc = json.loads(stdout)
        best, ranked = doc["best_overrides"], doc["ranked"]
    except (ValueError, KeyError, TypeError) as e:
        return [f"tune --json: no best_overrides and ranked in its output ({e!r})"]
    if not (isinstance(best, list) and all(isinstance(o, str) for o in best)):
        return [f"tune --json: best_overrides is {json.dumps(best)}, not a list of overrides"]
    if not (isinstance(ranked, list) and ranked and isinstance(ranked[0], dict)
            and same(ranked[0].get("overrides"), best)):
        return ["tune --json: best_overrides are not those of the combination ranked first"]
    tool, config = cmd[0], cmd[2]
    extra = [a for a in cmd[3:] if a != "--json"]
    c = subprocess.run([tool, "check", config] + extra + best, capture_output=True, text=True)
    print(c.stdout + c.stderr)
    return [f"best combination: check exit {c.returncode}"] if c.returncode != 0 else []


def main():
    args, cmd = parse(sys.argv[1:])
    for path in args.big:
        with open(path, "w") as f:
            f.write(("# " + "x" * 98 + "\n") * 1_000_000)
    p = subprocess.run(cmd, capture_output=True, text=True, errors="replace")
    out = p.stdout + p.stderr
    problems = []
    if p.returncode != args.exit: problems.append(f"exit status {p.returncode}, expected {args.exit}")
    if p.returncode < 0 or "Sanitizer" in out: problems.append("crashed")
    problems += [f"missing: {m}" for m in args.match if not re.search(m, out, re.M)]
    problems += [f"present: {m}" for m in args.absent if re.search(m, out, re.M)]
    for path, m in args.file_match:
        try:
            with open(path, errors="replace") as f: text = f.read()
        except OSError as e: problems.append(f"{path}: {e}"); continue
        if not re.search(m, text, re.M): problems.append(f"missing in {path}: {m}")
    for path, limit in args.file_under:
        try: size = os.path.getsize(path)
        except OSError as e: problems.append(f"{path}: {e}"); continue
        if size >= limit: problems.append(f"{path}: {size} bytes, not under {limit}")
    problems += json_problems(args, p.stdout)
    if not problems and args.then_check: problems += then_check(cmd, p.stdout)
    if problems:
        print("\n".join(problems)); print("---- output ----"); print(out); sys.exit(1)
    print(out[-3000:])


main()
