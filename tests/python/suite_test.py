"""bench/suite.yaml against the script that generates it, and every program against Python's own
parser (the suite's programs must run in real PyTorch as well as in `tessera compile -c`).

    python3 -m unittest discover -s tests/python -p 'suite_test.py'
"""

import ast
import os
import subprocess
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "bench"))

import make_suite  # noqa: E402
import pytorch_baseline  # noqa: E402

SUITE = os.path.join(ROOT, "bench", "suite.yaml")

try:
    import torch
except ImportError:
    torch = None


class SuiteFileTest(unittest.TestCase):
    def test_committed_suite_equals_the_generator_output(self):
        with open(SUITE, encoding="utf-8") as f:
            committed = f.read()
        generated = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "make_suite.py")],
                                   check=True, capture_output=True, text=True).stdout
        self.assertEqual(committed, generated,
                         "bench/suite.yaml is stale: run python3 bench/make_suite.py --out bench/suite.yaml")

    def test_reader_sees_every_generated_entry(self):
        entries = pytorch_baseline.load_suite(SUITE)
        expected = make_suite.entries()
        self.assertEqual([e["id"] for e in entries], [e["id"] for e in expected])
        for got, want in zip(entries, expected):
            self.assertEqual(got["program"], want["program"], got["id"])
            self.assertEqual(got["tiers"], want["tiers"], got["id"])
            self.assertEqual(got.get("flops"), want["flops"], got["id"])
            for key in ("family", "model", "phase", "seq", "kv", "dtype"):
                self.assertEqual(got[key], want[key], got["id"])

    def test_reader_agrees_with_pyyaml(self):
        try:
            import yaml
        except ImportError:
            self.skipTest("PyYAML is not installed: the suite reader is not cross-checked with it")
        with open(SUITE, encoding="utf-8") as f:
            text = f.read()
        ours = pytorch_baseline.parse_suite_text(text)
        theirs = yaml.safe_load(text)
        self.assertEqual(theirs["version"], ours["version"])
        self.assertEqual(theirs["entries"], ours["entries"])

    def test_every_program_is_python_whose_last_call_creates_the_inputs(self):
        for e in pytorch_baseline.load_suite(SUITE):
            with self.subTest(entry=e["id"]):
                tree = ast.parse(e["program"])
                last = tree.body[-1]
                self.assertIsInstance(last, ast.Expr)
                self.assertIsInstance(last.value, ast.Call)
                split = pytorch_baseline.split_program(e["program"])
                # Every argument of the final call is an input; every input has the entry's dtype.
                self.assertTrue(all(kind == "input" for kind, _ in split.args))
                for src in split.input_sources():
                    self.assertEqual("dtype=torch.bfloat16" in src, e["dtype"] == "bf16", src)
                # No input is created anywhere but in the final call.
                body = "".join(ast.get_source_segment(e["program"], s) for s in tree.body[:-1])
                self.assertNotIn("torch.randn", body)
                # bf16 programs give every module its dtype (PyTorch would otherwise make f32 weights).
                modules = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and
                           isinstance(n.func, ast.Attribute) and n.func.attr in ("Linear", "RMSNorm")]
                for m in modules:
                    has_bf16 = any(k.arg == "dtype" for k in m.keywords)
                    self.assertEqual(has_bf16, e["dtype"] == "bf16", ast.get_source_segment(e["program"], m))
                compile(e["program"], e["id"], "exec")

    @unittest.skipIf(torch is None, "PyTorch is not installed: the programs are not run in PyTorch here")
    def test_every_program_runs_in_pytorch(self):
        # On the meta device: PyTorch checks every op, shape and dtype without computing anything.
        want = {"f32": torch.float32, "bf16": torch.bfloat16}
        for e in pytorch_baseline.load_suite(SUITE):
            with self.subTest(entry=e["id"]), torch.no_grad():
                callee, inputs, make_call = pytorch_baseline.build_program(torch, e, device="meta")
                outputs = pytorch_baseline.flatten_outputs(make_call(callee)(*inputs))
                self.assertTrue(outputs)
                for out in outputs:
                    self.assertEqual(out.dtype, want[e["dtype"]])
                for p in callee.parameters():
                    self.assertEqual(p.dtype, want[e["dtype"]])


if __name__ == "__main__":
    unittest.main()
