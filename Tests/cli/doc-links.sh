#!/usr/bin/env bash
# Every relative link in README.md, docs/*.md and the clients' and e2e READMEs points at a file
# that exists, and every #anchor at a heading of that page (GitHub's heading slugs), so moving
# a section between pages cannot leave a dead link behind.
set -euo pipefail
cd "$(dirname "$0")/../.."
python3 - <<'PY'
import os, re, sys

def slug(heading):
    s = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return s.replace(" ", "-")

pages = ["README.md", "clients/python/README.md", "Tests/e2e/README.md"]
pages += sorted("docs/" + f for f in os.listdir("docs") if f.endswith(".md"))
anchors = {}
for page in pages:
    text = re.sub(r"```.*?```", "", open(page).read(), flags=re.S)
    anchors[os.path.normpath(page)] = {slug(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}
bad = []
for page in pages:
    for link in re.findall(r"\]\(([^)\s]+)\)", open(page).read()):
        if re.match(r"[a-z]+:", link):
            continue
        path, _, anchor = link.partition("#")
        target = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else os.path.normpath(page)
        if not os.path.exists(target):
            bad.append(f"{page}: {link}: no such file")
        elif anchor and target.endswith(".md") and anchor not in anchors.get(target, set()):
            bad.append(f"{page}: {link}: no such heading")
for b in bad:
    print("FAIL", b)
if bad:
    sys.exit(1)
print(f"doc-links: all passed ({len(pages)} pages)")
PY
