#!/usr/bin/env python3
"""Import graph of the workspace, drawn from the code's own imports; fails on a cycle.

Checks two levels and exits 1 if either has a cycle:

* crates: the workspace members (and the root package) with the workspace crates
  each depends on in Cargo.toml ([dependencies], [build-dependencies]; the
  [dev-dependencies] are listed apart but take part in the cycle check);
* files: the .rs files under each crate's src/ (and benches/, examples/), test
  code left out (tests.rs, src/**/tests/, #[cfg(test)] and #[test] items). A file
  A has an arrow to a file B when code in A names, by a path, an item defined in
  B: `use` declarations and path expressions such as `crate::db::open(`. A path
  is resolved to the file of the deepest module that exists, following
  re-exports (`pub use`, globs, aliases, other workspace crates) to the file that
  defines the item, so a facade that only re-exports makes no false arrows.
  A `pub use` is itself an arrow from the file that re-exports, so a file that
  re-exports its children and also defines items they use is in a cycle with them.
  `mod x;` is no arrow, and neither is importing a module (`use crate::m;`): the
  paths that go through it (`m::f()`) are.

Run from the workspace root (Python 3 standard library only):

    python3 scripts/imports.py             # crates, files, cycles; exit 1 on a cycle
    python3 scripts/imports.py --arrows    # also every arrow between files
    python3 scripts/imports.py --crate memtrace-engine   # one crate only
    python3 scripts/imports.py --self-test # checks this script on tiny crates

Limits: it reads source, not the compiler's name resolution. Items made by
macros are unknown (a path to one ends at its module's file); names brought in by
a non-public glob (`use super::*`) count where a word of the file matches them,
so a local variable named like such an item can make an extra arrow; `cfg`
conditions other than `test` are ignored (both branches count).
"""

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
except ImportError:  # older Pythons: the small reader at the end of this file
    tomllib = None


# --------------------------------------------------------------------------- lexer

TOKEN_RE = re.compile(
    r"""
      (?P<ws>\s+)
    | (?P<lcom>//[^\n]*)
    | (?P<bcom>/\*)
    | (?P<raw>[bc]?r\#*")
    | (?P<str>[bc]?"(?:[^"\\]|\\.)*")
    | (?P<chr>b?'(?:[^'\\\n]|\\(?:x[0-9A-Fa-f]{2}|u\{[0-9A-Fa-f_]{1,8}\}|.))')
    | (?P<life>'[A-Za-z_][A-Za-z0-9_]*)
    | (?P<rid>r\#[A-Za-z_][A-Za-z0-9_]*)
    | (?P<meta>\$[A-Za-z_][A-Za-z0-9_]*)
    | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<num>[0-9][0-9A-Za-z_]*(?:\.[0-9][0-9A-Za-z_]*)?)
    | (?P<p>::|.)
    """,
    re.X | re.S,
)

KEYWORDS = set(
    "as async await break const continue crate dyn else enum extern false fn for if impl in "
    "let loop match mod move mut pub ref return self Self static struct super trait true type "
    "unsafe use where while union macro_rules".split()
)
PATH_STARTERS = {"crate", "self", "super", "Self"}
ITEM_KEYWORDS = {"fn", "struct", "enum", "trait", "type", "const", "static", "union"}
EXTERNAL_CRATES = {"std", "core", "alloc"}


class Tok:
    """One token: kind is id (identifier or keyword), rid (r#raw), str, lit, meta or p (punctuation)."""

    __slots__ = ("kind", "text", "line")

    def __init__(self, kind, text, line):
        self.kind, self.text, self.line = kind, text, line


def tokenize(src):
    """Tokens of Rust source without comments and whitespace; strings kept whole."""
    toks = []
    pos, line, n = 0, 1, len(src)
    match = TOKEN_RE.match
    while pos < n:
        m = match(src, pos)
        kind = m.lastgroup
        end = m.end()
        if kind == "bcom":  # block comments nest
            depth, end = 1, pos + 2
            while depth and end < n:
                if src.startswith("/*", end):
                    depth, end = depth + 1, end + 2
                elif src.startswith("*/", end):
                    depth, end = depth - 1, end + 2
                else:
                    end += 1
        elif kind == "raw":  # r#"..."#: ends at a quote followed by as many hashes
            closing = '"' + "#" * (m.group().count("#"))
            close = src.find(closing, end)
            end = n if close < 0 else close + len(closing)
            toks.append(Tok("str", src[pos:end], line))
        elif kind == "str":
            toks.append(Tok("str", m.group(), line))
        elif kind in ("chr", "num", "life"):
            toks.append(Tok("lit", m.group(), line))
        elif kind == "rid":
            toks.append(Tok("rid", m.group()[2:], line))
        elif kind == "meta":  # $crate is the crate a macro comes from; other $x are macro variables
            text = m.group()
            toks.append(Tok("id", "crate", line) if text == "$crate" else Tok("meta", text, line))
        elif kind in ("id", "p"):
            toks.append(Tok(kind, m.group(), line))
        if kind in ("ws", "bcom", "raw", "str", "lcom"):
            line += src.count("\n", pos, end)
        pos = end
    return toks


def match_brackets(toks):
    """Index of the closing bracket for each opening one (and ( [ {)."""
    pairs, stack = {}, []
    closer = {")": "(", "]": "[", "}": "{"}
    for i, t in enumerate(toks):
        if t.kind != "p":
            continue
        if t.text in "([{":
            stack.append(i)
        elif t.text in closer:
            if stack and toks[stack[-1]].text == closer[t.text]:
                pairs[stack.pop()] = i
    return pairs


def cfg_is_test_only(words):
    """Whether an attribute's words (`cfg ( all ( test , x ) )`) hold only under test."""

    def pred(i):
        name, i = words[i], i + 1
        if i < len(words) and words[i] == "(":
            args, i = [], i + 1
            while words[i] != ")":
                arg, i = pred(i)
                args.append(arg)
                if words[i] == ",":
                    i += 1
            return (name, args), i + 1
        if i < len(words) and words[i] == "=":
            i += 2
        return (name, None), i

    def test_only(node):
        name, args = node
        if args is None:
            return name == "test"
        if name == "all":
            return any(test_only(a) for a in args)
        if name == "any":
            return bool(args) and all(test_only(a) for a in args)
        return False

    try:
        return test_only(pred(2)[0])
    except IndexError:
        return False


def is_test_attr(words):
    if words == ["test"] or (len(words) == 3 and words[1:] == ["::", "test"]):
        return True
    return words[:2] == ["cfg", "("] and cfg_is_test_only(words)


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


# --------------------------------------------------------------------------- graphs


def strongly_connected(nodes, succ):
    """Tarjan's algorithm, iterative; components come sinks first."""
    index, low, on_stack, stack, comps = {}, {}, set(), [], []
    counter = 0
    for start in nodes:
        if start in index:
            continue
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work = [(start, iter(sorted(succ.get(start, ()))))]
        while work:
            node, it = work[-1]
            pushed = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(succ.get(w, ())))))
                    pushed = True
                    break
                if w in on_stack:
                    low[node] = min(low[node], index[w])
            if pushed:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == node:
                        break
                comps.append(sorted(comp))
    return comps


def layers(comps, succ):
    """Layer of each node: 1 + the highest layer it points to (a cycle shares one layer)."""
    comp_of = {v: n for n, comp in enumerate(comps) for v in comp}
    layer = {}
    for n, comp in enumerate(comps):  # sinks first, so targets are done
        below = [layer[comp_of[w]] for v in comp for w in succ.get(v, ()) if comp_of[w] != n]
        layer[n] = 1 + max(below, default=0)
    return {v: layer[comp_of[v]] for v in comp_of}


def shortest_circle(comp, succ):
    """A shortest cycle through the component's first node (breadth-first)."""
    members, start = set(comp), comp[0]
    prev, frontier = {start: None}, [start]
    while frontier:
        nxt = []
        for v in frontier:
            for w in sorted(succ.get(v, ())):
                if w == start:
                    path = [v]
                    while prev[path[-1]] is not None:
                        path.append(prev[path[-1]])
                    return list(reversed(path)) + [start]
                if w in members and w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return [start]


# --------------------------------------------------------------------------- report


class Report:
    def __init__(self, ws, only=None):
        self.ws = ws
        self.lines = {sf.rel: sf.lines for sf in ws.parses}
        packages = ws.packages
        if only is not None:
            packages = [p for p in packages if only in (p.name, p.lib_name, p.dir.name)]
            if not packages:
                raise ValueError("no crate %r; crates: %s" % (only, ", ".join(p.name for p in ws.packages)))
        self.packages = packages
        names = {p.name for p in packages}
        # crates
        succ = {p.name: {d.name for k in ("normal", "build") for _, d, _ in p.deps[k]} for p in ws.packages}
        with_dev = {p.name: succ[p.name] | {d.name for _, d, _ in p.deps["dev"]} for p in ws.packages}
        self.crate_layer = layers(strongly_connected(sorted(succ), succ), succ)
        self.crate_cycles = [
            c for c in strongly_connected(sorted(with_dev), with_dev) if len(c) > 1 and names & set(c)
        ]
        # files
        self.nodes = sorted(f for f, p in ws.files.items() if p.name in names)
        node_set = set(self.nodes)
        self.arrows = {e: v for e, v in ws.arrows().items() if e[0] in node_set and e[1] in node_set}
        self.succ = collections.defaultdict(set)
        for a, b in self.arrows:
            self.succ[a].add(b)
        comps = strongly_connected(self.nodes, self.succ)
        self.file_layer = layers(comps, self.succ)
        self.file_cycles = sorted((c for c in comps if len(c) > 1), key=lambda c: (-len(c), c))

    def failed(self):
        return bool(self.crate_cycles or self.file_cycles)

    def source_line(self, rel, line):
        lines = self.lines.get(rel, [])
        if not 0 < line <= len(lines):
            return ""
        text = " ".join(lines[line - 1].split())
        return text if len(text) <= 90 else text[:87] + "..."

    def evidence(self, a, b):
        refs = sorted(set(self.arrows[(a, b)]))
        line, note = refs[0]
        more = "  (+%d more)" % (len(refs) - 1) if len(refs) > 1 else ""
        note = "  [%s]" % note if note else ""
        return "%s:%d -> %s    %s%s%s" % (a, line, b, self.source_line(a, line), note, more)

    def write(self, show_arrows, out=None):
        w = (out or sys.stdout).write
        w("Crates (layer order; a crate's layer is 1 + the highest layer of its dependencies)\n")
        width = max(len(p.name) for p in self.packages)
        for p in sorted(self.packages, key=lambda p: (self.crate_layer[p.name], p.name)):
            deps = [d.name for _, d, _ in p.deps["normal"]] + [d.name + " (build)" for _, d, _ in p.deps["build"]]
            line = "  %2d  %-*s %8s lines" % (self.crate_layer[p.name], width, p.name, "{:,}".format(p.lines))
            if deps:
                line += "  -> " + ", ".join(deps)
            if p.deps["dev"]:
                line += "   dev -> " + ", ".join(d.name for _, d, _ in p.deps["dev"])
            w(line + "\n")
        deepest = max(self.file_layer.values(), default=0)
        w("\nFiles: %d files, %d arrows, longest chain %d files (a cycle counts as one)\n"
          % (len(self.nodes), len(self.arrows), deepest))
        if show_arrows:
            for a, b in sorted(self.arrows):
                w("  " + self.evidence(a, b) + "\n")
        w("\nCycles between crates: %s\n" % (len(self.crate_cycles) or "none"))
        for n, comp in enumerate(self.crate_cycles, 1):
            w("  crate cycle %d: %s\n" % (n, ", ".join(comp)))
            by_name = {p.name: p for p in self.ws.packages}
            for name in comp:
                p = by_name[name]
                for kind in ("normal", "build", "dev"):
                    for _, dep, line in p.deps[kind]:
                        if dep.name in comp:
                            label = {"normal": "dependency", "build": "build-dependency", "dev": "dev-dependency"}[kind]
                            where = self.ws.rel(p.dir / "Cargo.toml")
                            src = p.manifest_text.splitlines()[line - 1].strip() if line else ""
                            w("    %s -> %s  (%s)  %s:%d  %s\n" % (name, dep.name, label, where, line, src))
        w("\nCycles between files: %s\n" % (len(self.file_cycles) or "none"))
        for n, comp in enumerate(self.file_cycles, 1):
            crates = sorted({self.ws.files[f].name for f in comp})
            w("  file cycle %d: %d files (%s)\n" % (n, len(comp), ", ".join(crates)))
            for f in comp:
                w("    %s\n" % f)
            w("    shortest circle: %s\n" % " -> ".join(shortest_circle(comp, self.succ)))
            w("    arrows inside (file:line -> file    code):\n")
            members = set(comp)
            for a, b in sorted(e for e in self.arrows if e[0] in members and e[1] in members):
                w("      " + self.evidence(a, b) + "\n")
        total = len(self.crate_cycles) + len(self.file_cycles)
        w("\n%s\n" % ("FAIL: %d cycle(s)" % total if total else "OK: no cycles"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--arrows", action="store_true", help="print every arrow between files")
    parser.add_argument("--crate", metavar="NAME", help="look at one crate only (package, lib or folder name)")
    parser.add_argument("--root", default=".", help="workspace root (default: the current folder)")
    parser.add_argument("--self-test", action="store_true", help="check this script on tiny crates")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if not (Path(args.root) / "Cargo.toml").is_file():
        sys.stderr.write("no Cargo.toml in %s: run from the workspace root\n" % Path(args.root).resolve())
        return 2
    ws = Workspace(args.root)
    for warning in ws.warnings:
        sys.stderr.write("note: %s\n" % warning)
    try:
        report = Report(ws, args.crate)
    except ValueError as e:
        sys.stderr.write("%s\n" % e)
        return 2
    report.write(args.arrows)
    return 1 if report.failed() else 0


# --------------------------------------------------------------------------- TOML


def read_toml(text):
    if tomllib is not None:
        return tomllib.loads(text)
    return MiniToml(text).document()


class MiniToml:
    """The part of TOML that Cargo manifests use, for Pythons without tomllib."""

    BARE = re.compile(r"[A-Za-z0-9_-]+")
    WORD = re.compile(r"[^\s,\]}#]+")
    BASIC = re.compile(r'"((?:[^"\\\n]|\\.)*)"')

    def __init__(self, text):
        self.s, self.i = text, 0

    def skip(self, newlines):
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c in " \t\r" or (newlines and c == "\n"):
                self.i += 1
            elif c == "#":
                nl = s.find("\n", self.i)
                self.i = len(s) if nl < 0 else nl
            else:
                break

    def expect(self, token):
        self.skip(False)
        if not self.s.startswith(token, self.i):
            raise ValueError("TOML: expected %r at offset %d" % (token, self.i))
        self.i += len(token)

    def document(self):
        root = table = {}
        while True:
            self.skip(True)
            if self.i >= len(self.s):
                return root
            if self.s.startswith("[[", self.i):
                self.i += 2
                keys = self.key()
                self.expect("]]")
                table = {}
                self.descend(root, keys[:-1]).setdefault(keys[-1], []).append(table)
            elif self.s[self.i] == "[":
                self.i += 1
                keys = self.key()
                self.expect("]")
                table = self.descend(root, keys)
            else:
                self.assign(table)

    def assign(self, table):
        keys = self.key()
        self.expect("=")
        self.descend(table, keys[:-1])[keys[-1]] = self.value()

    @staticmethod
    def descend(table, keys):
        for k in keys:
            table = table.setdefault(k, {})
            if isinstance(table, list):
                table = table[-1]
        return table

    def key(self):
        parts = []
        while True:
            self.skip(False)
            if self.s[self.i] in "\"'":
                parts.append(self.string())
            else:
                m = self.BARE.match(self.s, self.i)
                if not m:
                    raise ValueError("TOML: bad key at offset %d" % self.i)
                parts.append(m.group())
                self.i = m.end()
            self.skip(False)
            if not self.s.startswith(".", self.i):
                return parts
            self.i += 1

    def value(self):
        self.skip(False)
        c = self.s[self.i]
        if c in "\"'":
            return self.string()
        if c in "[{":
            close = "]" if c == "[" else "}"
            result = [] if c == "[" else {}
            self.i += 1
            while True:
                self.skip(True)
                if self.s.startswith(close, self.i):
                    self.i += 1
                    return result
                if c == "[":
                    result.append(self.value())
                else:
                    self.assign(result)
                self.skip(True)
                if self.s.startswith(",", self.i):
                    self.i += 1
        m = self.WORD.match(self.s, self.i)
        self.i = m.end()
        word = m.group()
        if word in ("true", "false"):
            return word == "true"
        try:
            return int(word.replace("_", ""))
        except ValueError:
            try:
                return float(word.replace("_", ""))
            except ValueError:
                return word

    def string(self):
        s, i = self.s, self.i
        for quotes in ('"""', "'''"):
            if s.startswith(quotes, i):
                end = s.index(quotes, i + 3)
                body = s[i + 3 : end]
                self.i = end + 3
                body = body[1:] if body.startswith("\n") else body
                return body if quotes == "'''" else unescape(body)
        if s[i] == "'":
            end = s.index("'", i + 1)
            self.i = end + 1
            return s[i + 1 : end]
        m = self.BASIC.match(s, i)
        if not m:
            raise ValueError("TOML: bad string at offset %d" % i)
        self.i = m.end()
        return unescape(m.group(1))


def unescape(body):
    try:
        return json.loads('"%s"' % body.replace("\n", "\\n"))
    except ValueError:
        return body


# --------------------------------------------------------------------------- self-test

SELF_TEST_FILES = {
    "Cargo.toml": """
        [workspace]
        members = ["alpha", "beta", "gamma"]

        [workspace.dependencies]
        st-alpha = { path = "alpha" }
        st-beta = { path = "beta", version = "0.1.0" }

        [package]
        name = "st-root"
        version = "0.1.0"

        [dependencies]
        st-alpha.workspace = true
        """,
    "src/lib.rs": "pub use st_alpha::*;\n",
    "alpha/Cargo.toml": """
        [package]
        name = "st-alpha"
        version = "0.1.0"

        [dev-dependencies]
        st-beta.workspace = true # closes a circle, only for tests
        """,
    "alpha/src/lib.rs": """
        //! mod fake; /* mod fake2; */
        pub mod use_a;
        pub mod use_b;
        mod path_a;
        mod path_b;
        mod hidden_x;
        mod hidden_y;
        mod hub;
        pub mod shapes;
        mod plain_a;
        mod plain_b;
        mod plain_c;
        #[path = "odd/place.rs"]
        mod placed;
        #[cfg(test)]
        mod tests;
        #[cfg(test)]
        mod checks;
        pub mod nest {
            pub mod inner {
                pub fn g() -> u32 {
                    self::super::super::path_a::f()
                }
            }
        }
        """,
    "alpha/src/use_a.rs": "use crate::use_b::B;\npub struct A(pub B);\n",
    "alpha/src/checks.rs": "use crate::plain_b::PB;\n",
    "alpha/src/use_b.rs": "use crate::{\n    plain_c::{self, PC},\n    use_a::{A as Alias},\n};\npub struct B;\npub fn f(_: Alias, _: PC) {}\n",
    "alpha/src/path_a.rs": "pub fn f() -> u32 {\n    crate::path_b::g() + 1\n}\n",
    "alpha/src/path_b.rs": "pub fn g() -> u32 {\n    if false { super::path_a::f() } else { 0 }\n}\n",
    # hidden_x names Why through hub (a glob of hub::inner, which renames hidden_y::Y)
    "alpha/src/hub/mod.rs": "mod inner;\npub use inner::*;\n",
    "alpha/src/hub/inner.rs": "pub use crate::hidden_y::Y as Why;\n",
    "alpha/src/hidden_x.rs": "use crate::hub::Why;\npub struct X(pub Why);\n",
    "alpha/src/hidden_y.rs": "pub struct Y;\npub fn make() -> crate::hidden_x::X { crate::hidden_x::X(Y) }\n",
    # a facade: children name each other through it, which is no cycle
    "alpha/src/shapes/mod.rs": "mod circle;\nmod square;\nmod tri;\npub use circle::Circle;\npub use square::Square;\npub use tri::Tri;\n",
    "alpha/src/shapes/circle.rs": "use super::Square;\npub struct Circle(pub Square);\n",
    "alpha/src/shapes/square.rs": "pub struct Square;\n",
    "alpha/src/shapes/tri.rs": "use super::*;\npub struct Tri(pub Circle);\n",
    # test code that must be ignored, with braces in strings, chars and comments
    "alpha/src/plain_a.rs": r'''
        pub struct PA;
        #[cfg(test)]
        mod tests {
            use crate::plain_b::PB;
            const S: &str = "}{ \" }";
            const C: char = '{';
            const R: &str = r#"}" {"#;
            /* } /* nested { */ */
            // }
            fn t<'a>(_: &'a str) -> PB { crate::plain_b::make() }
        }
        pub fn after() -> crate::plain_c::PC { crate::plain_c::PC }
        ''',
    "alpha/src/plain_b.rs": """
        use crate::plain_a::PA;
        pub struct PB(pub PA);
        pub fn make() -> PB { PB(PA) }
        #[test]
        fn t() { let _ = crate::plain_a::after(); }
        """,
    "alpha/src/plain_c.rs": "pub struct PC;\n#[cfg(all(test, feature = \"x\"))]\nuse crate::plain_a::PA;\n",
    "alpha/src/tests.rs": "use crate::plain_b::PB;\nuse crate::plain_a::PA;\n",
    "alpha/src/odd/place.rs": "pub fn f() -> crate::use_a::A { unimplemented!() }\n",
    "beta/Cargo.toml": """
        [package]
        name = "st-beta"
        version = "0.1.0"

        [dependencies]
        alpha_renamed = { package = "st-alpha", path = "../alpha" }
        """,
    "beta/src/lib.rs": "pub use alpha_renamed::shapes as geometry;\nmod user;\n",
    "beta/src/user.rs": "use crate::geometry::Circle;\npub fn f(c: Circle) -> alpha_renamed::use_a::A { unimplemented!() }\n",
    "gamma/Cargo.toml": """
        [package]
        name = "st-gamma"
        version = "0.1.0"

        [dependencies]
        st-beta = { workspace = true }
        """,
    "gamma/src/main.rs": "fn main() { st_beta::nothing(); std::process::exit(0) }\n",
}


def self_test():
    import textwrap

    started = time.time()
    failures = []

    def check(ok, what):
        if not ok:
            failures.append(what)

    tmp = tempfile.mkdtemp(prefix="imports-self-test-")
    try:
        for rel, text in SELF_TEST_FILES.items():
            path = Path(tmp) / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        ws = Workspace(tmp)
        report = Report(ws)
        cycles = [set(c) for c in report.file_cycles]
        a = "alpha/src/"
        expected = [
            {a + "use_a.rs", a + "use_b.rs"},
            {a + "path_a.rs", a + "path_b.rs"},
            {a + "hidden_x.rs", a + "hidden_y.rs"},
        ]
        for e in expected:
            check(e in cycles, "cycle %s found" % sorted(e))
        check(len(cycles) == len(expected), "exactly %d file cycles (got %s)" % (len(expected), cycles))
        arrows = set(report.arrows)
        for edge in [
            (a + "shapes/circle.rs", a + "shapes/square.rs"),
            (a + "shapes/tri.rs", a + "shapes/circle.rs"),
            (a + "shapes/mod.rs", a + "shapes/circle.rs"),
            (a + "plain_a.rs", a + "plain_c.rs"),
            (a + "plain_b.rs", a + "plain_a.rs"),
            (a + "odd/place.rs", a + "use_a.rs"),
            (a + "use_b.rs", a + "plain_c.rs"),
            (a + "hub/mod.rs", a + "hub/inner.rs"),
            ("beta/src/user.rs", a + "shapes/circle.rs"),
            ("beta/src/user.rs", a + "use_a.rs"),
            ("src/lib.rs", a + "lib.rs"),
        ]:
            check(edge in arrows, "arrow %s -> %s" % edge)
        for edge in [
            (a + "shapes/circle.rs", a + "shapes/mod.rs"),
            (a + "shapes/tri.rs", a + "shapes/mod.rs"),
            (a + "hidden_x.rs", a + "hub/mod.rs"),
            (a + "plain_a.rs", a + "plain_b.rs"),
            (a + "plain_c.rs", a + "plain_a.rs"),
            ("beta/src/user.rs", "beta/src/lib.rs"),
        ]:
            check(edge not in arrows, "no arrow %s -> %s" % edge)
        check(a + "tests.rs" not in ws.files and a + "checks.rs" not in ws.files, "test files are no nodes")
        check(not ws.warnings, "no warnings: mod in comments, #[cfg(test)] mod (got %s)" % ws.warnings)
        check(report.arrows.get((a + "lib.rs", a + "path_a.rs"), [(0,)])[0][0] == 22, "inline modules, self::super::")
        root_pkg = ws.packages[0]
        line = root_pkg.deps["normal"][0][2]
        check("workspace = true" in root_pkg.manifest_text.splitlines()[line - 1], "a dependency's Cargo.toml line")
        check([sorted(c) for c in report.crate_cycles] == [["st-alpha", "st-beta"]], "dev-dependency crate cycle")
        check(report.crate_layer == {"st-alpha": 1, "st-beta": 2, "st-gamma": 3, "st-root": 2},
              "crate layers (got %s)" % report.crate_layer)
        check(report.failed(), "cycles fail the check")
        gamma = Report(ws, "st-gamma")
        check(not gamma.failed(), "--crate st-gamma has no cycle")
        # the command itself: exit status 1, the cycles printed
        run = subprocess.run([sys.executable, os.path.abspath(__file__), "--root", tmp],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
        check(run.returncode == 1, "exit status 1 on cycles (got %d)" % run.returncode)
        check("dev-dependency" in run.stdout and "hidden_x.rs" in run.stdout, "cycles printed")
        check("super::path_a::f()" in run.stdout, "the line that makes an arrow is printed")
        # the TOML reader for old Pythons reads the manifests as tomllib does
        if tomllib is not None:
            for rel in SELF_TEST_FILES:
                if rel.endswith("Cargo.toml"):
                    text = (Path(tmp) / rel).read_text(encoding="utf-8")
                    check(MiniToml(text).document() == tomllib.loads(text), "MiniToml reads " + rel)
        # tokens: braces inside literals and comments are no brackets
        toks = tokenize("let s = \"{\"; let c = '{'; let r = r##\"}\"#\"##; /* { /* } */ */ let l: &'a u8; }")
        check([t.text for t in toks if t.kind == "p" and t.text in "{}"] == ["}"], "lexer skips literal braces")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for f in failures:
        print("FAILED: " + f)
    print("self-test: %s (%d failure(s), %.2fs)" % ("FAIL" if failures else "ok", len(failures), time.time() - started))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
