"""Tokens of Rust source, and which attributes mark test-only code."""

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
