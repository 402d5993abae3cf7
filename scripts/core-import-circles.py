#!/usr/bin/env python3
"""Lists import circles among the top-level modules of a Rust module tree (issue 19: none may
exist). Without arguments it checks docket-core (`core/src`, root `lib.rs`); with one, the
tree under that directory: a crate's `src` (root `lib.rs` or `main.rs`, e.g.
`backend-diesel/src`), or a module's folder rooted at its `mod.rs` (e.g. `cli/src/web`).

A module depends on another when its code (not its comments or tests) names the other: as
`crate::<other>` (docket-core) or `super::<other>` / `crate::<path>::<other>` (a subtree), or
an item that the root re-exports from it (`pub use other::Item`). An item defined in the root
file itself counts as a dependency on the root, whose own dependencies (the modules it names)
count too, so a module using the root's items while the root uses that module is a circle.
Modules declared under `#[cfg(test)]` in the root are left out. Exits 1 when a circle
exists.

In a whole crate it also lists every import back up: a module naming an item through the
root's re-export (`crate::Item` for `pub use other::Item`) rather than the module that defines
it (`crate::other::Item`) imports from the module above it; exits 1 when there is one."""
import glob, os, re, sys

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.join(here, "..")
crate_root = None
if len(sys.argv) > 1:
    root = os.path.join(repo, sys.argv[1]) if not os.path.isabs(sys.argv[1]) else sys.argv[1]
    crate_root = next(
        (f for f in ("lib.rs", "main.rs") if not os.path.exists(os.path.join(root, "mod.rs"))
         and os.path.exists(os.path.join(root, f))),
        None,
    )
if crate_root:
    # A whole crate: every `crate::x` names a module or a re-export, as in docket-core.
    root_file = crate_root
    prefixes = [r"crate::"]
    label = sys.argv[1]
elif len(sys.argv) > 1:
    root_file = "mod.rs"
    # `crate::web::x` from inside cli/src/web: the path of the subtree in its crate.
    crate_path = "::".join(os.path.normpath(sys.argv[1]).split(os.sep)[2:])
    prefixes = [r"super::", rf"crate::{crate_path}::"] if crate_path else [r"super::"]
    label = sys.argv[1]
else:
    root = os.path.join(repo, "core", "src")
    root_file = "lib.rs"
    prefixes = [r"crate::"]
    label = "core"
ROOT = "(root)"
crate_mode = root_file in ("lib.rs", "main.rs")


def strip(text):
    """Code only: up to the first `#[cfg(test)]`, without `//` comments."""
    code = text.split("#[cfg(test)]")[0]
    return "\n".join(l.split("//")[0] for l in code.splitlines())


TEST_MOD = r"#\[cfg\(test\)\]\s*(?:pub\s+)?mod\s+(\w+)\s*;"
root_text = open(os.path.join(root, root_file)).read()
test_modules = set(re.findall(TEST_MOD, root_text))
modules = set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", root_text, re.M))
modules -= test_modules
reexported = {}
for m in re.finditer(r"pub use (\w+)::(\{[^;]*\}|\w+);", root_text):
    for name in re.findall(r"\w+", m.group(2)):
        reexported[name] = m.group(1)
# Items the root file defines itself (types, functions, constants, aliases).
defined = set(
    re.findall(
        r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:struct|enum|fn|const|static|type|trait)\s+(\w+)",
        strip(re.sub(TEST_MOD, "", root_text)),
        re.M,
    )
)


def target_of(name):
    if crate_mode:
        return reexported.get(name, name)  # every `crate::x` names a module or a re-export
    if name in reexported:
        return reexported[name]
    if name in modules:
        return name
    if name in defined:
        return ROOT
    return None


def names_in(code):
    """The first path segment after each prefix, and the names of `super::{a, b}` groups."""
    found = []
    for prefix in prefixes:
        for m in re.finditer(prefix + r"(\{[^}]*\}|\w+)", code):
            group = m.group(1)
            if group.startswith("{"):
                # `super::{a, b::c}`: the first segment of each path in the group.
                for part in group[1:-1].split(","):
                    part = part.strip()
                    if part:
                        found.append(re.match(r"\w+", part).group(0))
            else:
                found.append(group)
    return found


deps = {}
back_up = set()
for path in glob.glob(os.path.join(root, "**", "*.rs"), recursive=True):
    rel = os.path.relpath(path, root)
    top = rel.split(os.sep)[0].removesuffix(".rs")
    if top in test_modules:
        continue
    text = open(path).read()
    if rel == root_file:
        # `#[cfg(test)] mod tests;` in the root ends no code: drop the declaration only.
        text = re.sub(TEST_MOD, "", text)
    code = strip(text)
    if rel == root_file:
        top = ROOT
        # The root names its modules directly (`pages::overview`).
        for name in re.findall(r"\b(\w+)::", code):
            if name in modules:
                deps.setdefault(ROOT, set()).add(name)
        continue
    for name in names_in(code):
        if crate_mode and name in reexported and name not in modules:
            back_up.add((rel, name, reexported[name]))
        target = target_of(name)
        if target is not None and target != top:
            deps.setdefault(top, set()).add(target)
if crate_mode:
    deps.pop(ROOT, None)


def reaches(a, b, seen=()):
    return any(n == b or (n not in seen and reaches(n, b, seen + (n,))) for n in deps.get(a, ()))


circles = sorted({tuple(sorted((a, b))) for a in deps for b in deps[a] if reaches(b, a)})
for a, b in circles:
    print(f"circle: {a} <-> {b}")
print(f"{label} modules:", {k: sorted(v) for k, v in sorted(deps.items())})
for rel, name, home in sorted(back_up):
    print(f"import back up: {rel} names crate::{name}; name it crate::{home}::{name}")
sys.exit(1 if circles or back_up else 0)
