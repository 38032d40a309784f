"""The printed report of crates, files, arrows and cycles."""

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

from .graphs import *  # noqa: F401,F403
from .tree import *  # noqa: F401,F403


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
