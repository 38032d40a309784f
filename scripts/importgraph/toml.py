"""A small TOML reader for Pythons without tomllib."""

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
