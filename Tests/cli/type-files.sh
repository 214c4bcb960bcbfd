#!/usr/bin/env bash
# One type per file, named after it (docs/architecture.md, "the rules a contributor follows",
# rule 6): every type declared in Sources/ of 25 lines or more lives in TYPE.swift (or
# TYPE+PART.swift); only small satellites (an error, an option set, a code table) and private
# helpers may sit in the file of the type they serve. Fails listing each type that does not.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import os, re, sys
decl = re.compile(r'^(?:(?:public|internal|private|fileprivate|package|final|open|indirect|@\w+(?:\([^)]*\))?)\s+)*(class|struct|enum|protocol|actor)\s+(\w+)')
bad = []
for d, _, fs in os.walk("Sources"):
    for f in fs:
        if not f.endswith(".swift"):
            continue
        path = os.path.join(d, f)
        base = f[:-6].split("+")[0]
        lines = open(path).read().split("\n")
        i = 0
        while i < len(lines):
            m = decl.match(lines[i])
            if not m:
                i += 1
                continue
            depth, started, j = 0, False, i
            while j < len(lines):
                code = re.sub(r'"(?:[^"\\]|\\.)*"', '""', lines[j].split("//")[0])
                for c in code:
                    if c == "{":
                        depth, started = depth + 1, True
                    elif c == "}":
                        depth -= 1
                if started and depth == 0:
                    break
                j += 1
            private = re.search(r"\b(private|fileprivate)\s", lines[i]) is not None
            if m.group(2) != base and j - i + 1 >= 25 and not private:
                bad.append(f"{path}:{i + 1}: {m.group(1)} {m.group(2)} ({j - i + 1} lines) belongs in {m.group(2)}.swift")
            i = j + 1
if bad:
    print("types of 25 lines or more in a file not named after them:")
    print("\n".join(sorted(bad)))
    sys.exit(1)
print("every type of 25 lines or more is in a file named after it")
PY
