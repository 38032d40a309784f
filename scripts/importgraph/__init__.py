"""The parts of scripts/imports.py: lexer, module tree, graphs, report, TOML, self-test."""
