#!/usr/bin/env python3
"""Checks the Markdown of the repository's docs: every relative link in README.md,
ARCHITECTURE.md, BENCHMARKS.md and the book (docs/src) points at a file that exists, and an
anchor (#...) at a heading of that page; and every page of the book is in its SUMMARY.md.
Exits 1, naming each broken link, when anything is wrong."""

import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOOK = ROOT / "docs" / "src"
TOP = ["README.md", "ARCHITECTURE.md", "BENCHMARKS.md"]

LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
INCLUDE = re.compile(r"\{\{#include\s+([^}\s]+)\s*\}\}")


def prose(text):
    """The lines outside fenced code blocks, with inline code spans blanked."""
    out, fence = [], None
    for line in text.splitlines():
        t = line.lstrip()
        if fence:
            if t.startswith(fence):
                fence = None
            out.append("")
            continue
        m = re.match(r"(```+|~~~+)", t)
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line))
    return out


def expand(path, seen=()):
    """A page's text with mdBook's {{#include ...}} lines replaced by what they include."""
    text = path.read_text(encoding="utf-8")
    if path in seen:
        return text

    def inc(m):
        target = (path.parent / m.group(1)).resolve()
        return expand(target, seen + (path,)) if target.is_file() else m.group(0)

    return INCLUDE.sub(inc, text)


def slug(heading):
    """The anchor GitHub and mdBook give a heading: lowercase, punctuation dropped,
    spaces as hyphens."""
    text = re.sub(r"<[^>]+>", "", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = text.strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def check_links(path, problems):
    for no, line in enumerate(prose(path.read_text(encoding="utf-8")), 1):
        for m in LINK.finditer(line):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("//"):
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{no}: {target}"
            if not dest.exists():
                problems.append(f"{where}: no such file")
                continue
            if anchor and dest.suffix == ".md" and anchor not in heading_anchors(dest):
                problems.append(f"{where}: no heading #{anchor} in {dest.relative_to(ROOT)}")


_cache = {}


def heading_anchors(path):
    """The anchors of a page's headings (code fences skipped, includes expanded)."""
    if path not in _cache:
        found, counts, fence = set(), {}, None
        for line in expand(path).splitlines():
            t = line.lstrip()
            if fence:
                fence = None if t.startswith(fence) else fence
                continue
            m = re.match(r"(```+|~~~+)", t)
            if m:
                fence = m.group(1)
                continue
            m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if not m:
                continue
            base = slug(m.group(1).replace("`", ""))
            n = counts.get(base, 0)
            counts[base] = n + 1
            found.add(base if n == 0 else f"{base}-{n}")
        _cache[path] = found
    return _cache[path]


def check_summary(problems):
    summary = BOOK / "SUMMARY.md"
    listed = set()
    for line in prose(summary.read_text(encoding="utf-8")):
        for m in LINK.finditer(line):
            listed.add((BOOK / m.group(1).partition("#")[0]).resolve())
    for page in sorted(BOOK.rglob("*.md")):
        if page.name != "SUMMARY.md" and page.resolve() not in listed:
            problems.append(f"{page.relative_to(ROOT)}: not in docs/src/SUMMARY.md")


def main():
    problems = []
    pages = [ROOT / name for name in TOP] + sorted(BOOK.rglob("*.md"))
    for page in pages:
        check_links(page, problems)
    check_summary(problems)
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"book-check: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    print(f"book-check: {len(pages)} pages, every relative link and anchor found, every page in SUMMARY.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
