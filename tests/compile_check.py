#!/usr/bin/env python3
"""Compile-fail check for one file of tests/compile_fail/ (or examples/errors/).

The file names the rule ids it must violate in lines `// EXPECT: [ID]`. Compiled as it is, it must
fail with exactly one `error` diagnostic per expected id, each carrying its `[ID]` on the error line
itself, with at most 4 lines of template-instantiation context before it. Compiled with
-DOVERLAP_CONTROL (the near-identical valid variant), it must compile with no diagnostic at all.

With --compiles instead, FILE (a valid example) must compile with no diagnostic at all.

usage: compile_check.py [--compiles] FILE -- COMPILER [FLAGS...]
"""
import re
import subprocess
import sys

ERROR = re.compile(r"(^|[\s:)])error( #\d+-D)?:")
CONTEXT = re.compile(r"In instantiation of|required from|required by|In substitution of|"
                     r"in .constexpr. expansion of|"
                     r"In function|In member function|In static member function")
INCLUDE_CHAIN = re.compile(r"^(In file included from|\s+from )")


def compile_output(cmd):
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, proc.stdout


def context_before(lines, index):
    count = 0
    for line in reversed(lines[:index]):
        if INCLUDE_CHAIN.match(line):
            continue
        if not CONTEXT.search(line):
            break
        count += 1
    return count


def main(argv):
    compiles = len(argv) > 1 and argv[1] == "--compiles"
    if compiles:
        argv = argv[:1] + argv[2:]
    if "--" not in argv or argv.index("--") != 2:
        sys.exit(__doc__)
    path, compiler = argv[1], argv[3:]
    if compiles:
        rc, out = compile_output(compiler + [path])
        if rc != 0 or out.strip():
            print(out)
            print(f"FAIL {path}: must compile with no diagnostic")
            return 1
        print(f"ok {path}: compiles cleanly")
        return 0
    with open(path, encoding="utf-8") as f:
        expected = re.findall(r"^// EXPECT: \[([A-Za-z]+-(?:[0-9]+[a-z]?|[A-Z]+))\]", f.read(), re.M)
    if not expected:
        sys.exit(f"{path}: no '// EXPECT: [ID]' line")

    problems = []
    rc, out = compile_output(compiler + [path])
    lines = out.splitlines()
    errors = [(i, l) for i, l in enumerate(lines) if ERROR.search(l)]
    if rc == 0:
        problems.append("compiled, but must fail")
    if len(errors) != len(expected):
        problems.append(f"{len(errors)} error lines, expected {len(expected)} (one per rule)")
    for rule in expected:
        hits = [(i, l) for i, l in errors if f"[{rule}]" in l]
        if len(hits) != 1:
            problems.append(f"[{rule}] is on {len(hits)} error lines, expected 1")
            continue
        depth = context_before(lines, hits[0][0])
        if depth > 4:
            problems.append(f"[{rule}] has {depth} lines of instantiation context before it (max 4)")
    for _, line in errors:
        if not any(f"[{rule}]" in line for rule in expected):
            problems.append(f"unexpected error: {line.strip()}")

    control_rc, control_out = compile_output(compiler + ["-DOVERLAP_CONTROL", path])
    if control_rc != 0 or control_out.strip():
        problems.append("the control (-DOVERLAP_CONTROL) must compile cleanly:\n" + control_out)

    if problems:
        print(out)
        print(f"FAIL {path}:")
        for p in problems:
            print("  - " + p)
        return 1
    print(f"ok {path}: {', '.join('[' + r + ']' for r in expected)}; control compiles")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
