#!/usr/bin/env python3
"""The PyTorch oracle: runs every program of the differential corpus (tests/support/program_corpus.h)
in Tessera and in real PyTorch on the same inputs and parameters, and compares the outputs' shapes,
dtypes and values (docs/torch-ops.md, "Checking against PyTorch").

    python3 tests/pytorch_oracle/oracle.py --tessera build/bin/tessera \\
        --corpus-tool build/bin/tessera_corpus_json [--programs NAME,...] [--jobs N] [--keep-dir DIR]

For each program: `tessera run --target sim --save-io FILE` runs it on the CPU simulator (and checks
it against Tessera's reference evaluator); then the program runs in PyTorch with the factory calls
that create its inputs (torch.randn/rand/randint/zeros/ones/full, in call order, as Tessera numbers
them) answering with the inputs of FILE, and each nn module's parameters loaded from FILE at the
module's first call (in call order, as Tessera creates them). The outputs must agree: same shape,
same dtype, integers and bools exactly equal, floats within bench/pytorch_baseline.py's per-dtype
tolerances (the same policy `tessera bench` uses against PyTorch).

Exit status: 0 when every program that ran agreed, 1 when one disagreed (or failed to run), 2 for
a usage error, 77 when PyTorch cannot be imported (the test is then reported as skipped, with the
reason). PYTHON: when torch is not importable here and TESSERA_TORCH_PYTHON names another
interpreter, the script runs itself again with that one.
"""

import argparse
import ast
import concurrent.futures
import json
import os
import subprocess
import sys
import tempfile
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "bench"))

import pytorch_baseline as pb  # noqa: E402  (the safetensors reader, tolerances, comparison)

SKIP = 77

# Corpus programs PyTorch is not asked to run, each with the reason. Every program of the corpus is
# meant to be valid PyTorch; keep this list minimal.
EXCLUDED = {
}


def import_torch():
    """torch, or re-exec under TESSERA_TORCH_PYTHON, or None."""
    try:
        import torch
        return torch
    except ImportError:
        pass
    other = os.environ.get("TESSERA_TORCH_PYTHON", "")
    # Not realpath: a venv's python is a link to the base interpreter, but runs with the venv's packages.
    if other and os.path.abspath(other) != os.path.abspath(sys.executable) and not os.environ.get("TESSERA_ORACLE_REEXEC"):
        env = dict(os.environ, TESSERA_ORACLE_REEXEC="1")
        sys.stdout.flush()
        os.execve(other, [other, "-B", os.path.abspath(__file__)] + sys.argv[1:], env)
    return None


def read_corpus(args):
    if args.corpus_json:
        with open(args.corpus_json, encoding="utf-8") as f:
            corpus = json.load(f)
    else:
        out = subprocess.run([args.corpus_tool], check=True, capture_output=True, text=True).stdout
        corpus = json.loads(out)
    if not isinstance(corpus, list) or not all(isinstance(p, dict) and "name" in p and "program" in p for p in corpus):
        raise ValueError("the corpus must be a JSON list of {name, program}")
    return corpus


def run_tessera(args, program, io_path):
    """`tessera run --target sim --save-io`: (exit code, output text)."""
    cmd = [args.tessera, "run", "--target", "sim", "--seed", "0", "--save-io", io_path, "-c", program]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return None, f"tessera run took over {args.timeout} s"
    return done.returncode, (done.stdout + done.stderr).strip()


CONSTANT_FACTORIES = ("zeros", "ones", "full")


class ProgramInputs:
    """Stands in for torch's input factories while a program runs: the n-th call returns the n-th
    input of the --save-io file, after checking it has the shape and dtype the real call gives."""

    def __init__(self, torch, st, names):
        self.torch, self.st, self.names, self.next = torch, st, names, 0
        self.originals = {f: getattr(torch, f) for f in pb.INPUT_FACTORIES}

    def factory(self, fname):
        original = self.originals[fname]

        def call(*a, **kw):
            made = original(*a, **kw)
            # Constant tensors built inside a function or method body (a mask in forward) are
            # constants in Tessera, not program inputs (docs/torch-ops.md, "Generated tensors").
            if fname in CONSTANT_FACTORIES and sys._getframe(1).f_code.co_name != "<module>":
                return made
            if self.next >= len(self.names):
                raise ValueError(f"the program calls torch.{fname} more often than Tessera made inputs "
                                 f"({len(self.names)})")
            name = self.names[self.next]
            self.next += 1
            t = pb.load_tensor(self.torch, self.st, name)
            if tuple(t.shape) != tuple(made.shape) or t.dtype != made.dtype:
                raise ValueError(f"input '{name}' (torch.{fname} call {self.next}) is {tuple(t.shape)} {t.dtype} "
                                 f"in Tessera, {tuple(made.shape)} {made.dtype} in PyTorch")
            # torch.randint(low, high, size): Tessera's input holds [0, high - low), the program adds low.
            if fname == "randint" and len(a) == 3:
                return t.clone() + a[0]
            return t.clone()
        return call

    def __enter__(self):
        for f in self.originals:
            setattr(self.torch, f, self.factory(f))
        return self

    def __exit__(self, *exc):
        for f, fn in self.originals.items():
            setattr(self.torch, f, fn)
        return False


class ProgramParameters:
    """Loads each module's own parameters from the --save-io file at its first call: Tessera
    creates them then, in call order, so the n-th parameter of the file belongs to the n-th
    parameter PyTorch meets this way. Each must have the same name (last path component), shape
    and dtype."""

    def __init__(self, torch, st, params):
        self.torch, self.st = torch, st
        self.params = list(params.items())   # [(tensor name, dotted path)] in Tessera's order
        self.next = 0
        self.loaded = set()
        self.handle = None

    def hook(self, module, _inputs):
        # Tessera traces modules in eval mode (self.training is False, dropout is the identity).
        module.training = False
        own = list(module.named_parameters(recurse=False))
        if not own or id(module) in self.loaded:
            return
        self.loaded.add(id(module))
        with self.torch.no_grad():
            for pname, p in own:
                if self.next >= len(self.params):
                    raise ValueError(f"{type(module).__name__}.{pname}: PyTorch has more parameters than Tessera "
                                     f"({len(self.params)})")
                tname, path = self.params[self.next]
                self.next += 1
                t = pb.load_tensor(self.torch, self.st, tname)
                if path.split(".")[-1] != pname or tuple(t.shape) != tuple(p.shape) or t.dtype != p.dtype:
                    raise ValueError(f"Tessera's parameter {path} is {tuple(t.shape)} {t.dtype}, PyTorch's next one "
                                     f"({type(module).__name__}.{pname}) is {tuple(p.shape)} {p.dtype}")
                p.copy_(t)

    def __enter__(self):
        self.handle = self.torch.nn.modules.module.register_module_forward_pre_hook(self.hook)
        return self

    def __exit__(self, *exc):
        self.handle.remove()
        return False


def run_pytorch(torch, program, st):
    """Runs `program` with the file's inputs and parameters; returns its outputs (a flat list of tensors)."""
    tree = ast.parse(program)
    if not tree.body or not isinstance(tree.body[-1], ast.Expr):
        raise ValueError("the program's last statement is not an expression")
    body = ast.Module(body=tree.body[:-1], type_ignores=[])
    last = ast.Expression(body=tree.body[-1].value)
    # The names a -c program may use without importing them (the torch_expr frontend's globals).
    namespace = {"__name__": "corpus_program", "torch": torch, "nn": torch.nn, "F": torch.nn.functional}
    names, params, _ = st.io_names()
    with torch.no_grad(), warnings.catch_warnings(), ProgramInputs(torch, st, names) as inputs, \
            ProgramParameters(torch, st, params) as p:
        # e.g. "Mismatch dtype between input and weight" (a float32 RMSNorm weight on bfloat16 input)
        warnings.simplefilter("ignore", UserWarning)
        exec(compile(body, "<program>", "exec"), namespace)  # noqa: S102 (the corpus's own programs)
        result = eval(compile(last, "<program>", "eval"), namespace)  # noqa: S307
    if inputs.next != len(names):
        raise ValueError(f"Tessera made {len(names)} inputs, the program created {inputs.next} in PyTorch")
    if p.next != len(params):
        raise ValueError(f"Tessera made {len(params)} parameters, PyTorch used {p.next}")
    outputs = pb.flatten_outputs(result)
    for o in outputs:
        if not isinstance(o, torch.Tensor):
            raise ValueError(f"the program returns {type(o).__name__}, not a tensor")
    return outputs


def reduction_bound(st):
    """The longest sum any output can come from, bounded by the largest input or parameter: the
    f32 tolerance grows with it (pytorch_baseline.tolerance)."""
    return max([1] + [rec.numel() for rec in st.tensors.values()])


def tessera_phase(args, entry, work_dir):
    """Runs the program in Tessera (in a worker thread): (exit code, text, io path)."""
    io_path = os.path.join(work_dir, entry["name"] + ".safetensors")
    rc, text = run_tessera(args, entry["program"], io_path)
    return rc, text, io_path


def pytorch_phase(torch, entry, tessera_result):
    """Runs the program in PyTorch on Tessera's data and compares (in the main thread: the input
    factories are patched process-wide): {name, status: agree|disagree, detail}."""
    name, program = entry["name"], entry["program"]
    rc, text, io_path = tessera_result
    if rc is None or rc == 2 or not os.path.exists(io_path):
        return {"name": name, "status": "disagree",
                "detail": "Tessera did not run it: " + (text.splitlines()[-1] if text else f"exit {rc}")}
    notes = [] if rc == 0 else ["Tessera's own check against its reference failed (run exit 1)"]
    try:
        st = pb.SafetensorsFile(io_path)
        reference = run_pytorch(torch, program, st)
    except Exception as e:  # noqa: BLE001 (recorded per program; the run goes on)
        return {"name": name, "status": "disagree", "detail": f"PyTorch: {type(e).__name__}: {e}"}
    _, _, out_names = st.io_names()
    if len(reference) != len(out_names):
        return {"name": name, "status": "disagree",
                "detail": f"PyTorch gives {len(reference)} outputs, Tessera {len(out_names)}"}
    k = reduction_bound(st)
    results = [pb.compare_tensors(torch, out, ref, pb.load_tensor(torch, st, out), k)
               for out, ref in zip(out_names, reference)]
    verdict = pb.verdict(results)
    ok = verdict["status"] == "pass" and rc == 0
    return {"name": name, "status": "agree" if ok else "disagree", "detail": "; ".join(notes + [verdict["detail"]])}


def parse_args(argv):
    p = argparse.ArgumentParser(description="Run the differential corpus in Tessera and in PyTorch and compare.")
    p.add_argument("--tessera", required=True, help="the tessera CLI")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--corpus-tool", help="tessera_corpus_json, which prints the corpus as JSON")
    src.add_argument("--corpus-json", help="the corpus as a JSON file [{name, program}]")
    p.add_argument("--programs", help="comma-separated program names (default: all)")
    p.add_argument("--jobs", type=int, default=2, help="programs checked at once (default 2)")
    p.add_argument("--timeout", type=int, default=600, help="seconds one tessera run may take (default 600)")
    p.add_argument("--keep-dir", help="keep the --save-io files in this directory")
    return p.parse_args(argv)


def main(argv):
    args = parse_args(argv)
    torch = import_torch()
    if torch is None:
        print(f"pytorch_oracle: skipped: PyTorch is not importable by {sys.executable} "
              f"(set TESSERA_TORCH_PYTHON, or configure with -DTESSERA_TORCH_PYTHON=, to an interpreter that has it)")
        return SKIP
    torch.set_num_threads(1)
    try:
        corpus = read_corpus(args)
    except (OSError, ValueError, subprocess.CalledProcessError) as e:
        print(f"pytorch_oracle: cannot read the corpus: {e}", file=sys.stderr)
        return 2
    stale = sorted(set(EXCLUDED) - {p["name"] for p in corpus})
    if stale:
        print(f"pytorch_oracle: EXCLUDED names programs the corpus does not have: {', '.join(stale)}", file=sys.stderr)
        return 2
    if args.programs:
        wanted = [n for n in args.programs.split(",") if n]
        unknown = sorted(set(wanted) - {p["name"] for p in corpus})
        if unknown:
            print(f"pytorch_oracle: no corpus program named {', '.join(unknown)}", file=sys.stderr)
            return 2
        corpus = [p for p in corpus if p["name"] in set(wanted)]

    with tempfile.TemporaryDirectory(prefix="tessera-oracle-") as tmp:
        work_dir = args.keep_dir or tmp
        os.makedirs(work_dir, exist_ok=True)
        todo = [e for e in corpus if e["name"] not in EXCLUDED]
        results = [{"name": e["name"], "status": "excluded", "detail": EXCLUDED[e["name"]]}
                   for e in corpus if e["name"] in EXCLUDED]
        for r in results:
            print(f"excluded  {r['name']}: {r['detail']}", flush=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            futures = [pool.submit(tessera_phase, args, entry, work_dir) for entry in todo]
            for entry, fut in zip(todo, futures):
                r = pytorch_phase(torch, entry, fut.result())
                results.append(r)
                mark = "ok" if r["status"] == "agree" else "DISAGREE"
                print(f"{mark:9} {r['name']}: {r['detail']}", flush=True)
    ran = [r for r in results if r["status"] != "excluded"]
    agreed = sum(1 for r in ran if r["status"] == "agree")
    print(f"pytorch_oracle: torch {torch.__version__}: {len(ran)} programs ran, {agreed} agreed, "
          f"{len(ran) - agreed} disagreed, {len(results) - len(ran)} excluded")
    return 0 if agreed == len(ran) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
