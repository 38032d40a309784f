"""Strongly connected components, layers and shortest circles of a graph."""

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
