#!/usr/bin/env python3
"""Regenerates the fuzz targets' seed corpora (tests/fuzz/corpus/<target>/) from the test programs.

    tests/fuzz/make_corpus.py [BUILD_DIR]     (default: build; needs BUILD_DIR/bin/tessera)

torch_expr: the differential corpus (tests/support/program_corpus.h) and the goldens' `#### program`
sections; pipeline_yaml: pipelines/*.yaml and tests/errors/pipelines/*.yaml; ir_text: the goldens'
`#### input` and `#### expected` sections; ir_json: `tessera compile --emit json` of a few programs
at every stage; safetensors: `tessera run --save-io` of a few programs; hf_config: the shipped
config.json files (data/models). Seeds are named by content
hash (as libFuzzer names its own), so a rerun replaces the folders with the same files.
"""
import hashlib
import pathlib
import re
import shutil
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
BUILD = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / "build")
CLI = BUILD / "bin" / "tessera"
OUT = ROOT / "tests" / "fuzz" / "corpus"
MAX_SEED_BYTES = 16384  # keeps the committed corpus small; bigger goldens add little coverage


def c_string_literals(text):
    """The C++ string literals of `text`, adjacent ones joined, as Python strings."""
    joined, current, in_run = [], None, False
    for match in re.finditer(r'"((?:[^"\\\n]|\\.)*)"|([{},])', text):
        if match.group(2):
            if current is not None:
                joined.append(current)
            current = None
            continue
        literal = bytes(match.group(1), "utf-8").decode("unicode_escape")
        current = literal if current is None else current + literal
    return joined


def golden_sections(path):
    sections, name = {}, None
    for line in path.read_text().splitlines(keepends=True):
        if line.startswith("#### "):
            name = line[5:].strip()
            sections.setdefault(name, [])
            sections[name].append("")
        elif name:
            sections[name][-1] += line
    return sections


def write_seeds(target, seeds):
    folder = OUT / target
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for seed in seeds:
        if isinstance(seed, str):
            seed = seed.encode()
        if not seed or len(seed) > MAX_SEED_BYTES:
            continue
        (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
    print(f"{target}: {len(list(folder.iterdir()))} seeds")


def main():
    goldens = sorted((ROOT / "tests" / "golden").rglob("*.txt"))
    corpus_header = (ROOT / "tests" / "support" / "program_corpus.h").read_text()
    # The corpus entries are {"Name", "program"}: every second joined literal is a program.
    programs = [s for s in c_string_literals(corpus_header) if "torch" in s or "nn." in s]
    programs += [text for g in goldens for text in golden_sections(g).get("program", [])]
    write_seeds("torch_expr", programs)

    pipelines = sorted((ROOT / "pipelines").glob("*.yaml")) + sorted((ROOT / "tests" / "errors" / "pipelines").glob("*.yaml"))
    write_seeds("pipeline_yaml", [p.read_bytes() for p in pipelines])

    printed = [text for g in goldens for name in ("input", "expected") for text in golden_sections(g).get(name, [])]
    write_seeds("ir_text", printed)

    json_programs = programs[:6]
    dumps = []
    for program in json_programs:
        for stage in ("torch", "tensor", "loop", "tile", "kernel"):
            run = subprocess.run([str(CLI), "compile", "-c", program, "--ir", stage, "--emit", "json"],
                                 capture_output=True)
            if run.returncode == 0:
                dumps.append(run.stdout)
    write_seeds("ir_json", dumps)

    files = []
    tmp = BUILD / "fuzz-seed.safetensors"
    for program in programs[:8]:
        for dtype in ("f32", "bf16"):
            run = subprocess.run([str(CLI), "run", "-c", program, "--dtype", dtype, "--save-io", str(tmp)],
                                 capture_output=True)
            if run.returncode == 0 and tmp.exists():
                files.append(tmp.read_bytes())
            tmp.unlink(missing_ok=True)
    write_seeds("safetensors", files)

    configs = [p.read_bytes() for p in sorted((ROOT / "data" / "models").glob("*/config.json"))]
    write_seeds("hf_config", configs)


if __name__ == "__main__":
    main()
