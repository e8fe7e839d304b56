#!/usr/bin/env python3
"""Regenerates the output of every ```console example in docs/*.md and README.md by running it.

Usage: scripts/update-doc-examples.py [BUILD_DIR]   (default: build)
The doc-example test (tests/e2e/doc_examples_test.cpp) checks the same blocks in CI.
"""
import pathlib
import shlex
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else root / "build").resolve()
tessera = build / "bin" / "tessera"
fixtures = build / "test-fixtures"

for doc in sorted((root / "docs").glob("*.md")) + [root / "README.md"]:
    lines = doc.read_text().split("\n")
    out, i, changed = [], 0, False
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line != "```console":
            continue
        # Copy the block, replacing the output after each `$ tessera` command.
        while i < len(lines) and lines[i] != "```":
            cmd = lines[i]
            out.append(cmd)
            i += 1
            if not cmd.startswith("$ tessera "):
                continue
            while i < len(lines) and lines[i] != "```" and not lines[i].startswith("$ "):
                i += 1
            args = shlex.split(cmd[len("$ tessera "):].replace("$TESSERA_FIXTURE_DIR", str(fixtures)))
            result = subprocess.run([str(tessera)] + args, capture_output=True, text=True, cwd=root)
            if result.returncode != 0:
                sys.exit(f"{doc}: `{cmd}` failed:\n{result.stderr}")
            stdout = result.stdout.replace(str(build), "<build>")
            out.extend(stdout.rstrip("\n").split("\n") if result.stdout else [])
            changed = True
    if changed:
        doc.write_text("\n".join(out))
        print(f"updated {doc.relative_to(root)}")
