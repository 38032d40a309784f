"""The script's check of itself on tiny crates."""

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
from .tree import *  # noqa: F401,F403
from .graphs import *  # noqa: F401,F403
from .report import *  # noqa: F401,F403
from .toml import *  # noqa: F401,F403


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
        run = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "imports.py"), "--root", tmp],
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
