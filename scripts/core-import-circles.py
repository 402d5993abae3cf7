#!/usr/bin/env python3
"""Lists import circles among docket-core's top-level modules (issue 19: none may exist).

A module depends on another when its code (not its comments or tests) names `crate::<other>`
or an item that `lib.rs` re-exports from it. Exits 1 when a circle exists."""
import glob, os, re, sys

root = os.path.join(os.path.dirname(__file__), "..", "core", "src")
lib = open(os.path.join(root, "lib.rs")).read()
reexported = {}
for m in re.finditer(r"pub use (\w+)::(\{[^;]*\}|\w+);", lib):
    for name in re.findall(r"\w+", m.group(2)):
        reexported[name] = m.group(1)

deps = {}
for path in glob.glob(os.path.join(root, "**", "*.rs"), recursive=True):
    rel = os.path.relpath(path, root)
    top = rel.split(os.sep)[0].removesuffix(".rs")
    if top == "lib":
        continue
    code = open(path).read().split("#[cfg(test)]")[0]
    code = "\n".join(l.split("//")[0] for l in code.splitlines())
    for name in re.findall(r"crate::(\w+)", code):
        target = reexported.get(name, name)
        if target != top:
            deps.setdefault(top, set()).add(target)

def reaches(a, b, seen=()):
    return any(n == b or (n not in seen and reaches(n, b, seen + (n,))) for n in deps.get(a, ()))

circles = sorted({tuple(sorted((a, b))) for a in deps for b in deps[a] if reaches(b, a)})
for a, b in circles:
    print(f"circle: {a} <-> {b}")
print("core modules:", {k: sorted(v) for k, v in sorted(deps.items())})
sys.exit(1 if circles else 0)
