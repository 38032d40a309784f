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
except ImportError:  # older Pythons: the small reader in importgraph/toml.py
    tomllib = None


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from importgraph.report import Report  # noqa: E402
from importgraph.selftest import self_test  # noqa: E402
from importgraph.tree import Workspace  # noqa: E402


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




if __name__ == "__main__":
    sys.exit(main())
