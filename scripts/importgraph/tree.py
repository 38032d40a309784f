"""The workspace's packages, module trees and files, and the paths each file names."""

import argparse
import collections
import glob as globmod
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

try:
    import tomllib  # Python 3.11+
except ImportError:  # older Pythons: the small reader in importgraph/toml.py
    tomllib = None

from .lexer import *  # noqa: F401,F403
from .toml import *  # noqa: F401,F403


# --------------------------------------------------------------------------- module tree


class Module:
    """A module: a file, or an inline `mod x { }` inside one."""

    def __init__(self, name, parent, file, rel, child_dir, package, externs=None):
        self.name, self.parent, self.file, self.file_rel = name, parent, file, rel
        self.child_dir = child_dir
        self.package = package
        self.root = parent.root if parent else self
        self.externs = externs if externs is not None else {}  # only on roots
        self.children = {}  # name -> Module
        self.items = set()  # names defined here (fn, struct, ...)
        self.imports = {}  # name -> [path segments] from `use`
        self.globs = []  # [path segments] from `use ...::*`


class Package:
    def __init__(self, name, directory, manifest, manifest_text):
        self.name, self.dir, self.manifest, self.manifest_text = name, directory, manifest, manifest_text
        lib = manifest.get("lib", {})
        self.lib_name = lib.get("name", name.replace("-", "_"))
        self.deps = {"normal": [], "build": [], "dev": []}  # kind -> [(extern name, Package, line)]
        self.lib_root = None
        self.lines = 0


class SourceFile:
    """What one parse of a file found: its `use` leaves, paths and words, by module scope."""

    def __init__(self, rel, lines):
        self.rel, self.lines = rel, lines
        self.uses = []  # (segments, is_glob, is_pub, scope, line)
        self.paths = []  # (segments, scope, line)
        self.words = collections.defaultdict(dict)  # scope -> {word: first line}


class Sentinel:
    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


NOT_FOUND = Sentinel("NOT_FOUND")  # a name a module does not know
EXTERNAL = Sentinel("EXTERNAL")  # a path that leaves the workspace (std, third-party crates)


class Workspace:
    def __init__(self, root):
        self.root = Path(root).resolve()
        self.packages = []
        self.files = {}  # rel path -> Package (the nodes)
        self.parses = []  # SourceFile
        self.warnings = []
        self.test_paths = set()  # files and folders of `#[cfg(test)] mod x;`
        self._load_manifests()
        for package in self.packages:
            self._load_package(package)

    # ---- Cargo.toml

    def rel(self, path):
        return Path(os.path.relpath(str(path), str(self.root))).as_posix()

    def _load_manifests(self):
        text = (self.root / "Cargo.toml").read_text(encoding="utf-8")
        manifest = read_toml(text)
        workspace = manifest.get("workspace", {})
        dirs = []
        if "package" in manifest:
            dirs.append(self.root)
        excluded = {(self.root / e).resolve() for e in workspace.get("exclude", [])}
        for pattern in workspace.get("members", []):
            for d in sorted(globmod.glob(str(self.root / pattern))):
                d = Path(d).resolve()
                if (d / "Cargo.toml").is_file() and d not in excluded and d not in dirs:
                    dirs.append(d)
        by_dir = {}
        for d in dirs:
            mtext = text if d == self.root else (d / "Cargo.toml").read_text(encoding="utf-8")
            m = manifest if d == self.root else read_toml(mtext)
            package = Package(m.get("package", {}).get("name", d.name), d, m, mtext)
            self.packages.append(package)
            by_dir[d] = package
        shared = workspace.get("dependencies", {})
        for package in self.packages:
            tables = [("normal", "dependencies"), ("build", "build-dependencies"), ("dev", "dev-dependencies")]
            targets = package.manifest.get("target", {})
            for kind, table in tables:
                specs = [package.manifest.get(table, {})] + [t.get(table, {}) for t in targets.values()]
                for spec_table in specs:
                    for key, spec in spec_table.items():
                        dep = self._member_dep(package, key, spec, shared, by_dir)
                        if dep:
                            line = dep_line(package.manifest_text, table, key)
                            package.deps[kind].append((dep[0], dep[1], line))

    def _member_dep(self, package, key, spec, shared, by_dir):
        """(extern name, Package) when a dependency is a workspace member, else None."""
        if not isinstance(spec, dict):
            return None
        base, renamed = package.dir, "package" in spec
        if spec.get("workspace"):
            spec = shared.get(key, {})
            if not isinstance(spec, dict):
                return None
            base, renamed = self.root, renamed or "package" in spec
        if "path" not in spec:
            return None
        dep = by_dir.get((base / spec["path"]).resolve())
        if dep is None or dep is package:
            return None
        return (key.replace("-", "_") if renamed else dep.lib_name), dep

    # ---- sources

    def _load_package(self, package):
        d = package.dir
        src = d / "src"
        package.lines = sum(count_lines(p) for p in sorted(src.rglob("*.rs"))) if src.is_dir() else 0
        externs = {name: dep for kind in ("normal", "build") for name, dep, _ in package.deps[kind]}
        dev_externs = dict(externs, **{name: dep for name, dep, _ in package.deps["dev"]})
        roots = []  # (file, externs, is_lib)
        lib_path = package.manifest.get("lib", {}).get("path")
        lib = d / lib_path if lib_path else src / "lib.rs"
        if lib.is_file():
            roots.append((lib, externs, True))
        bins = [d / b["path"] for b in package.manifest.get("bin", []) if "path" in b]
        bins += [src / "main.rs"] + sorted((src / "bin").glob("*.rs")) + sorted((src / "bin").glob("*/main.rs"))
        for folder, table in (("benches", "bench"), ("examples", "example")):
            bins += sorted((d / folder).glob("*.rs")) + sorted((d / folder).glob("*/main.rs"))
            bins += [d / b["path"] for b in package.manifest.get(table, []) if "path" in b]
        for b in bins:
            in_src = os.path.relpath(str(b), str(d)).startswith("src")
            roots.append((b, externs if in_src else dev_externs, False))
        seen = set()
        for file, ext, is_lib in roots:
            file = file.resolve()
            if not file.is_file() or file in seen or not self._is_source(package, file):
                continue
            seen.add(file)
            module = self._load_tree(package, file, ext, is_lib)
            if is_lib:
                package.lib_root = module
        # Files no crate root reaches are read as roots of their own, so they still count.
        for folder in ("src", "benches", "examples"):
            for file in sorted((d / folder).rglob("*.rs")) if (d / folder).is_dir() else []:
                rel = self.rel(file)
                resolved = file.resolve()
                if self.test_paths.intersection([resolved] + list(resolved.parents)):
                    continue
                if rel not in self.files and self._is_source(package, resolved):
                    self.warnings.append("%s is not reached from any crate root" % rel)
                    self._load_tree(package, resolved, externs, False)

    def _is_source(self, package, file):
        """Under src/, benches/ or examples/ of the package, and not test code."""
        rel = Path(os.path.relpath(str(file), str(package.dir))).parts
        if not rel or rel[0] not in ("src", "benches", "examples"):
            return False
        return rel[-1] != "tests.rs" and "tests" not in rel[1:-1]

    def _load_tree(self, package, file, externs, is_lib):
        externs = dict(externs)
        if not is_lib:
            externs.setdefault(package.lib_name, package)
        root = Module(None, None, file, self.rel(file), file.parent, package, externs)
        queue = [root]
        while queue:
            module = queue.pop()
            queue.extend(self._parse(module))
        return root

    def _parse(self, module):
        """Reads a module's file; returns the child modules declared by `mod x;`."""
        try:
            src = module.file.read_text(encoding="utf-8", errors="replace")
        except OSError as e:
            self.warnings.append("cannot read %s: %s" % (module.file, e))
            return []
        rel = self.rel(module.file)
        sf = SourceFile(rel, src.splitlines())
        children = FileParser(self, sf, module, tokenize(src)).run()
        if children is None:  # the whole file is #![cfg(test)]
            return []
        self.files[rel] = module.package
        self.parses.append(sf)
        return children

    def declare_child(self, scope, name, path_attr, at_file_level, line, rel):
        """`mod name;` in scope: the child module, or None when it is test code or missing."""
        if path_attr:
            base = scope.file.parent if at_file_level else scope.child_dir
            file = Path(os.path.normpath(str(base / path_attr)))
            mod_rs = True
        else:
            file = scope.child_dir / (name + ".rs")
            if not file.is_file():
                file = scope.child_dir / name / "mod.rs"
            mod_rs = file.name == "mod.rs"
        if not file.is_file():
            self.warnings.append("%s:%d: no file for `mod %s;`" % (rel, line, name))
            return None
        if not self._is_source(scope.package, file.resolve()):
            return None
        child_dir = file.parent if mod_rs else file.parent / file.stem
        child = Module(name, scope, file.resolve(), self.rel(file.resolve()), child_dir, scope.package)
        scope.children[name] = child
        return child

    # ---- name resolution

    def resolve(self, segs, ctx, guard):
        """What a path names from module ctx: a Module, a file (str), EXTERNAL or NOT_FOUND."""
        first, i = segs[0], 1
        if first == "crate":
            cur = ctx.root
        elif first == "self":
            cur = ctx
        elif first == "super":
            cur = ctx.parent or ctx
            while i < len(segs) and segs[i] == "super":
                cur, i = cur.parent or cur, i + 1
        elif first == "::":
            if len(segs) < 2:
                return EXTERNAL
            cur, i = self.extern_root(ctx, segs[1]), 2
        else:
            cur = self.lookup(ctx, first, guard, in_scope=True)
            if cur is NOT_FOUND:
                return EXTERNAL  # a type parameter, a local name, or a crate outside the workspace
        while i < len(segs):
            if not isinstance(cur, Module):
                return cur  # a path into an item (Enum::Variant, Type::method) stays in its file
            if segs[i] == "super":
                cur, i = cur.parent or cur, i + 1
                continue
            nxt = self.lookup(cur, segs[i], guard)
            if nxt is NOT_FOUND:
                return cur.file_rel  # the deepest module that exists
            cur, i = nxt, i + 1
        return cur

    def extern_root(self, ctx, name):
        package = ctx.root.externs.get(name)
        if package is None or package.lib_root is None:
            return EXTERNAL
        return package.lib_root

    def lookup(self, module, name, guard, in_scope=False):
        """One name in a module: its child module, its own item, or where an import of it leads."""
        if name in module.children:
            return module.children[name]
        if name in module.items:
            return module.file_rel
        key = (id(module), name)
        if key in guard:  # an import loop: give up on this way
            return NOT_FOUND
        guard.add(key)
        try:
            for segs in module.imports.get(name, ()):
                found = self.resolve(segs, module, guard)
                if found is not NOT_FOUND:
                    return found
            for segs in module.globs:
                target = self.resolve(segs, module, guard)
                if isinstance(target, Module):
                    found = self.lookup(target, name, guard)
                    if found is not NOT_FOUND:
                        return found
        finally:
            guard.discard(key)
        if in_scope:
            if name in EXTERNAL_CRATES:
                return EXTERNAL
            if name in module.root.externs:
                return self.extern_root(module, name)
        return NOT_FOUND

    # ---- arrows

    def arrows(self):
        """{(from file, to file): [(line, note)]} over all files."""
        arrows = collections.defaultdict(list)

        def add(sf, target, line, note=""):
            if isinstance(target, Module):
                target = target.file_rel
            if isinstance(target, str) and target in self.files and target != sf.rel:
                arrows[(sf.rel, target)].append((line, note))

        for sf in self.parses:
            for segs, is_glob, is_pub, scope, line in sf.uses:
                target = self.resolve(segs, scope, set())
                if not is_glob:
                    # Importing a module is no arrow by itself: its uses (`m::f()`) are.
                    if not isinstance(target, Module) or is_pub:
                        add(sf, target, line)
                elif is_pub or not isinstance(target, Module):
                    add(sf, target, line)
                else:  # `use m::*`: an arrow for each word of the file that m provides
                    for word, wline in sorted(sf.words[scope].items(), key=lambda kv: kv[1]):
                        if word in scope.items or word in scope.imports or word in scope.children:
                            continue
                        found = self.lookup(target, word, set())
                        if isinstance(found, str):
                            add(sf, found, line, "`%s` at line %d" % (word, wline))
            for segs, scope, line in sf.paths:
                add(sf, self.resolve(segs, scope, set()), line)
        return arrows


class FileParser:
    """One walk over a file's tokens: modules, items, `use` leaves, paths, words."""

    def __init__(self, ws, sf, module, toks):
        self.ws, self.sf, self.top, self.toks = ws, sf, module, toks
        self.pairs = match_brackets(toks)
        self.n = len(toks)

    def text(self, i):
        return self.toks[i].text if 0 <= i < self.n else ""

    def kind(self, i):
        return self.toks[i].kind if 0 <= i < self.n else ""

    def attribute(self, i):
        """At `#[` or `#![`: (index after it, words inside, inner?) or None."""
        j = i + 1
        inner = self.text(j) == "!"
        if inner:
            j += 1
        if self.text(j) != "[" or j not in self.pairs:
            return None
        end = self.pairs[j]
        return end + 1, [t.text for t in self.toks[j + 1 : end]], inner

    def skip_item(self, j):
        """Index just after the item (or field, statement, arm) that starts at j."""
        while self.text(j) == "#" and self.text(j + 1) == "[" and j + 1 in self.pairs:
            j = self.pairs[j + 1] + 1
        k = j
        while self.text(k) in ("pub", "unsafe", "async", "extern", "default") or self.kind(k) == "str":
            k = self.pairs.get(k + 1, k) + 1 if self.text(k + 1) == "(" and self.text(k) == "pub" else k + 1
        is_item = self.text(k) in ITEM_KEYWORDS or self.text(k) in ("mod", "impl", "use", "macro_rules")
        while k < self.n:
            t = self.text(k)
            if self.kind(k) == "p":
                if t in "([" and k in self.pairs:
                    k = self.pairs[k] + 1
                    continue
                if t == "{" and k in self.pairs:
                    k = self.pairs[k] + 1
                    return k + 1 if self.text(k) == ";" else k
                if t == ";":
                    return k + 1
                if t in ")]}":
                    return k
                if t == "," and not is_item:
                    return k + 1
            k += 1
        return k

    def note_test_module(self, start, end, scope):
        """Remembers the file of a skipped `#[cfg(test)] mod x;` so it is not read as a root."""
        for j in range(start, end - 2):
            if self.text(j) == "mod" and self.kind(j + 1) in ("id", "rid") and self.text(j + 2) == ";":
                name = self.text(j + 1)
                self.ws.test_paths.add((scope.child_dir / (name + ".rs")).resolve())
                self.ws.test_paths.add((scope.child_dir / name).resolve())

    def use_tree(self, j, prefix, leaves):
        """Parses one use tree at j into leaves (segments, alias, is_glob, line); returns the index after it."""
        segs = list(prefix)
        if self.text(j) == "::":
            if not segs:
                segs.append("::")
            j += 1
        while True:
            t = self.text(j)
            if self.kind(j) in ("id", "rid"):
                segs.append(t)
                j += 1
                if self.text(j) == "::":
                    j += 1
                    continue
                break
            if t == "{" and j in self.pairs:
                end = self.pairs[j]
                j += 1
                while j < end:
                    nxt = self.use_tree(j, segs, leaves)
                    j = nxt + 1 if self.text(nxt) == "," or nxt == j else nxt
                return end + 1
            if t == "*":
                leaves.append((segs, None, True, self.toks[j].line))
                return j + 1
            return j
        line = self.toks[j - 1].line
        alias = segs[-1]
        if alias == "self":
            segs = segs[:-1]
            alias = segs[-1] if segs else None
        if self.text(j) == "as":
            alias = self.text(j + 1)
            j += 2
        if segs:
            leaves.append((segs, alias, False, line))
        return j

    def run(self):
        toks, text, kind = self.toks, self.text, self.kind
        sf, top = self.sf, self.top
        stack = []  # one entry per open `{`: the inline Module it opens, or None
        children = []
        path_attr = None
        i = 0
        while i < self.n:
            tok = toks[i]
            t, k = tok.text, tok.kind
            scope = top
            for entry in reversed(stack):
                if entry is not None:
                    scope = entry
                    break
            at_module_level = not stack or stack[-1] is not None
            if k == "p":
                if t == "#":
                    attr = self.attribute(i)
                    if attr:
                        after, words, inner = attr
                        if is_test_attr(words):
                            if inner and not stack:
                                return None
                            if not inner:
                                end = self.skip_item(after)
                                self.note_test_module(after, end, scope)
                                i, path_attr = end, None
                                continue
                        if words[:2] == ["path", "="] and len(words) == 3:
                            path_attr = string_value(words[2])
                        i = after
                        continue
                elif t == "{":
                    stack.append(None)
                    path_attr = None
                elif t == "}":
                    if stack:
                        stack.pop()
                    path_attr = None
                elif t == ";":
                    path_attr = None
                elif t == "::" and kind(i + 1) in ("id", "rid"):
                    prev = toks[i - 1] if i else None
                    if prev is None or (prev.kind == "p" and prev.text not in (">", ")", "]")):
                        i = self.path(i, ["::"], i + 1, scope)
                        continue
                i += 1
                continue
            if k not in ("id", "rid"):
                i += 1
                continue
            keyword = k == "id" and t in KEYWORDS
            if keyword and t == "pub":
                j = self.pairs.get(i + 1, i) + 1 if text(i + 1) == "(" else i + 1
                if text(j) == "use":
                    i = self.use_decl(j, scope, True)
                else:
                    i = j
                continue
            if keyword and t == "use":
                i = self.use_decl(i, scope, False)
                continue
            if keyword and t == "mod" and kind(i + 1) in ("id", "rid"):
                name = text(i + 1)
                if text(i + 2) == ";":
                    child = self.ws.declare_child(scope, name, path_attr, scope is top, tok.line, sf.rel)
                    if child is not None:
                        children.append(child)
                    i, path_attr = i + 3, None
                    continue
                if text(i + 2) == "{":
                    inline = Module(name, scope, scope.file, sf.rel, scope.child_dir / name, scope.package)
                    scope.children[name] = inline
                    stack.append(inline)
                    i, path_attr = i + 3, None
                    continue
            if keyword and at_module_level:
                name_at = i + 1
                if t == "macro_rules" and text(i + 1) == "!":
                    name_at = i + 2
                elif t == "static" and text(i + 1) == "mut":
                    name_at = i + 2
                if (t in ITEM_KEYWORDS or t == "macro_rules") and kind(name_at) in ("id", "rid"):
                    name = text(name_at)
                    if name not in KEYWORDS or kind(name_at) == "rid":
                        scope.items.add(name)
            if text(i + 1) == "::" and kind(i + 2) in ("id", "rid") and (not keyword or t in PATH_STARTERS):
                prev = text(i - 1) if i else ""
                if prev not in (".", "::"):
                    i = self.path(i, [t], i + 1, scope)
                    continue
            if not keyword and text(i - 1) != "." and text(i + 1) != ":":
                sf.words[scope].setdefault(t, tok.line)
            i += 1
        return children

    def path(self, start, segs, j, scope):
        """Collects `a::b::c` (stopping before `::<` or `::{`); returns the index after it."""
        while self.text(j) == "::" and self.kind(j + 1) in ("id", "rid"):
            segs.append(self.text(j + 1))
            j += 2
        self.sf.paths.append((segs, scope, self.toks[start].line))
        return j

    def use_decl(self, i, scope, is_pub):
        leaves = []
        j = self.use_tree(i + 1, [], leaves)
        while j < self.n and self.text(j) != ";":
            j += 1
        for segs, alias, is_glob, line in leaves:
            if is_glob:
                scope.globs.append(segs)
            elif alias and alias != "_":
                scope.imports.setdefault(alias, []).append(segs)
            self.sf.uses.append((segs, is_glob, is_pub, scope, line))
        return j + 1


def string_value(literal):
    m = re.match(r'^r?#*"(.*?)"#*$', literal, re.S)
    return m.group(1) if m else literal


def count_lines(path):
    with open(str(path), "rb") as f:
        return f.read().count(b"\n")


def dep_line(text, table, key):
    """Line of Cargo.toml where dependency key is declared in table (0 if not found)."""

    def in_table(section, name):  # [dependencies] or [target.'cfg(unix)'.dependencies]
        return section == name or (section.startswith("target.") and section.endswith("." + name))

    section = None
    key_re = re.compile(r"^\s*[\"']?%s[\"']?\s*[=.]" % re.escape(key))
    for n, line in enumerate(text.splitlines(), 1):
        header = re.match(r"^\s*\[([^\[\]]+)\]", line)
        if header:
            section = header.group(1).strip()
            if in_table(section, "%s.%s" % (table, key)):
                return n
            continue
        if section is not None and in_table(section, table) and key_re.match(line):
            return n
    return 0
