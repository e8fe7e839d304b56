"""Tests of bench/pytorch_baseline.py. The parts that need no GPU run everywhere (suite reading,
the program split, the safetensors reader, tolerances, the report's JSON); the ones that need
PyTorch run on the CPU when it is installed and are skipped, with the reason shown, when not.

    python3 -m unittest discover -s tests/python -p 'pytorch_baseline_test.py' -v
"""

import io
import json
import math
import os
import struct
import sys
import tempfile
import unittest
from contextlib import redirect_stderr

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.dont_write_bytecode = True   # no __pycache__ in the source tree
sys.path.insert(0, os.path.join(ROOT, "bench"))

import pytorch_baseline as pb  # noqa: E402

try:
    import torch
except ImportError:
    torch = None
NO_TORCH = "PyTorch is not installed: the tensor comparison and program building are not tested here"

ENTRY = """  - id: {id}
    family: norm
    model: TinyLlama-1.1B
    phase: prefill
    seq: 32
    kv: 0
    dtype: f32
    tiers: [{tiers}]
    program: |
      import torch

      nn = torch.nn
      nn.RMSNorm(8)(torch.randn(1, 32, 8))
"""


def suite_text(*entries):
    return "# a comment\nversion: 1\nentries:\n" + "".join(entries)


def write_safetensors(path, tensors, metadata):
    """A minimal writer: tensors = {name: (dtype, shape, raw bytes)}."""
    header = {"__metadata__": metadata}
    offset = 0
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        offset += len(raw)
    blob = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for _, (_, _, raw) in tensors.items():
            f.write(raw)


def bf16_bytes(values):
    """Truncates f32 values to bf16 (exact for the values used here)."""
    return b"".join(struct.pack("<H", struct.unpack("<I", struct.pack("<f", v))[0] >> 16) for v in values)


class SuiteReaderTest(unittest.TestCase):
    def test_reads_scalars_lists_and_literal_blocks(self):
        suite = pb.parse_suite_text(suite_text(ENTRY.format(id="a", tiers="quick, full")))
        self.assertEqual(suite["version"], 1)
        (e,) = suite["entries"]
        self.assertEqual(e["id"], "a")
        self.assertEqual(e["seq"], 32)
        self.assertEqual(e["tiers"], ["quick", "full"])
        # The blank line inside the block is kept; the block ends with one newline (clip).
        self.assertEqual(e["program"], "import torch\n\nnn = torch.nn\nnn.RMSNorm(8)(torch.randn(1, 32, 8))\n")
        self.assertEqual(suite["_lines"], [4])

    def test_strip_block_quoted_strings_and_floats(self):
        text = ('version: 1\nentries:\n  - id: "x"\n    note: \'a: b\'\n    eps: 1e-05\n    kv: 0   # none\n'
                '    p: |-\n      a\n      b\n')
        (e,) = pb.parse_suite_text(text)["entries"]
        self.assertEqual(e["kv"], 0)
        self.assertEqual(e["id"], "x")
        self.assertEqual(e["note"], "a: b")
        self.assertEqual(e["eps"], 1e-05)
        self.assertEqual(e["p"], "a\nb")

    def test_rejects_what_it_does_not_understand(self):
        cases = {
            "no entries": "version: 1\n",
            "key twice": "version: 1\nentries:\n  - id: a\n    id: b\n",
            "flow mapping": "version: 1\nentries:\n  - id: {a: 1}\n",
            "not key value": "version: 1\nentries:\n  - id: a\n    just words\n",
            "outside entries": "version: 1\n  id: a\n",
            "tab": "version: 1\nentries:\n\t- id: a\n",
            "empty block": "version: 1\nentries:\n  - program: |\n  - id: b\n",
        }
        for what, text in cases.items():
            with self.subTest(what), self.assertRaises(pb.SuiteError):
                pb.parse_suite_text(text)

    def test_error_names_the_line(self):
        with self.assertRaisesRegex(pb.SuiteError, r"s\.yaml:4"):
            pb.parse_suite_text("version: 1\nentries:\n  - id: a\n    id: b\n", "s.yaml")

    def test_validation(self):
        good = ENTRY.format(id="a", tiers="full")
        self.assertEqual(len(pb.validate_suite(pb.parse_suite_text(suite_text(good)))), 1)
        bad = {
            "id twice": suite_text(good, good),
            "bad id": suite_text(ENTRY.format(id="A b", tiers="full")),
            "not in full": suite_text(ENTRY.format(id="a", tiers="quick")),
            "unknown tier": suite_text(ENTRY.format(id="a", tiers="slow, full")),
            "unknown family": suite_text(good.replace("family: norm", "family: conv")),
            "unknown model": suite_text(good.replace("TinyLlama-1.1B", "GPT-2")),
            "unknown dtype": suite_text(good.replace("dtype: f32", "dtype: f64")),
            "decode with seq 32": suite_text(good.replace("phase: prefill", "phase: decode")),
            "prefill with kv": suite_text(good.replace("kv: 0", "kv: 512")),
            "missing program": suite_text(good.split("    program:")[0]),
            "version 2": suite_text(good).replace("version: 1", "version: 2"),
            "flops zero": suite_text(good.replace("    program:", "    flops: 0\n    program:")),
        }
        for what, text in bad.items():
            with self.subTest(what), self.assertRaises(pb.SuiteError):
                pb.validate_suite(pb.parse_suite_text(text))

    def test_selection(self):
        entries = pb.validate_suite(pb.parse_suite_text(suite_text(
            ENTRY.format(id="a", tiers="quick, full"), ENTRY.format(id="b", tiers="full"),
            ENTRY.format(id="c", tiers="quick, full"))))
        ids = lambda es: [e["id"] for e in es]  # noqa: E731
        self.assertEqual(ids(pb.select_entries(entries)), ["a", "b", "c"])
        self.assertEqual(ids(pb.select_entries(entries, "quick")), ["a", "c"])
        self.assertEqual(ids(pb.select_entries(entries, "full")), ["a", "b", "c"])
        self.assertEqual(ids(pb.select_entries(entries, None, ["c", "b"])), ["b", "c"])  # suite order
        self.assertEqual(ids(pb.select_entries(entries, "quick", ["b", "c"])), ["c"])
        with self.assertRaisesRegex(pb.SuiteError, "no entry with id zz"):
            pb.select_entries(entries, None, ["a", "zz"])


class SplitProgramTest(unittest.TestCase):
    def test_module_call(self):
        s = pb.split_program("import torch\nclass B(torch.nn.Module):\n    def forward(self, x, y):\n"
                             "        return x + y\nB()(torch.randn(2, 3), torch.zeros(3, dtype=torch.bfloat16))\n")
        self.assertEqual(s.callee, "B()")
        self.assertEqual(s.args, [("input", "torch.randn(2, 3)"), ("input", "torch.zeros(3, dtype=torch.bfloat16)")])
        self.assertEqual(s.keywords, [])
        self.assertTrue(s.preamble.endswith("return x + y\n"))
        self.assertEqual(s.input_sources(), ["torch.randn(2, 3)", "torch.zeros(3, dtype=torch.bfloat16)"])

    def test_function_call_with_constants_and_keywords(self):
        s = pb.split_program("import torch.nn.functional as F; F.scaled_dot_product_attention("
                             "torch.randn(1, 2, 4, 8), torch.randn(1, 2, 4, 8), v=torch.rand(1, 2, 4, 8), "
                             "is_causal=True)")
        self.assertEqual(s.preamble, "import torch.nn.functional as F; ")
        self.assertEqual(s.callee, "F.scaled_dot_product_attention")
        self.assertEqual([k for k, _ in s.args], ["input", "input"])
        self.assertEqual(s.keywords, [("v", "input", "torch.rand(1, 2, 4, 8)"), ("is_causal", "const", "True")])

    def test_nested_factory_is_not_an_input(self):
        s = pb.split_program("import torch\ntorch.add(torch.randn(2), torch.randn(2) * 2)")
        self.assertEqual([k for k, _ in s.args], ["input", "const"])

    def test_rejects(self):
        for what, text in {"syntax": "f(", "no call": "import torch\nx = torch.randn(2)",
                           "expression not a call": "import torch\ntorch.randn(2) + 1",
                           "no inputs": "import torch\ntorch.nn.ReLU()(1)",
                           "starred": "import torch\nf(*[torch.randn(2)])", "empty": ""}.items():
            with self.subTest(what), self.assertRaises(pb.SuiteError):
                pb.split_program(text)


class SafetensorsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "e.safetensors")

    def tearDown(self):
        self.dir.cleanup()

    def write_io(self):
        write_safetensors(self.path, {
            "x": ("F32", [2, 2], struct.pack("<4f", 1.0, -2.0, 0.5, 3.25)),
            "p_w": ("BF16", [3], bf16_bytes([1.0, -0.5, 256.0])),
            "ids": ("I64", [2], struct.pack("<2q", 7, -1)),
            "mask": ("BOOL", [2], b"\x01\x00"),
            "h": ("F16", [1], struct.pack("<e", 0.25)),
            "out": ("F32", [0], b""),
        }, {"tessera.inputs": json.dumps(["x", "ids"]), "tessera.params": json.dumps({"p_w": "w"}),
            "tessera.outputs": json.dumps(["out", "mask"]), "tessera.program": "prog"})

    def test_reads_every_dtype_and_the_metadata(self):
        self.write_io()
        st = pb.SafetensorsFile(self.path)
        self.assertEqual(st.values("x"), [1.0, -2.0, 0.5, 3.25])
        self.assertEqual(st.values("p_w"), [1.0, -0.5, 256.0])
        self.assertEqual(st.values("ids"), [7, -1])
        self.assertEqual(st.values("mask"), [True, False])
        self.assertEqual(st.values("h"), [0.25])
        self.assertEqual(st.values("out"), [])
        self.assertEqual(st.tensors["x"].shape, [2, 2])
        self.assertEqual(st.io_names(), (["x", "ids"], {"p_w": "w"}, ["out", "mask"]))
        self.assertEqual(st.metadata["tessera.program"], "prog")

    def test_rejects_broken_files(self):
        def broken(header_edit=None, raw=None, truncate=None):
            header = {"x": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}
            if header_edit:
                header_edit(header)
            blob = raw if raw is not None else json.dumps(header).encode()
            data = struct.pack("<Q", len(blob)) + blob + b"\0" * 8
            with open(self.path, "wb") as f:
                f.write(data[:truncate] if truncate else data)
        cases = {
            "short": lambda: broken(truncate=4),
            "header past end": lambda: broken(truncate=12),
            "not json": lambda: broken(raw=b"{nope"),
            "not an object": lambda: broken(raw=b"[1]"),
            "bad dtype": lambda: broken(lambda h: h["x"].update(dtype="F8")),
            "offsets do not match": lambda: broken(lambda h: h["x"].update(data_offsets=[0, 4])),
            "past the end": lambda: broken(lambda h: h["x"].update(shape=[4], data_offsets=[0, 16])),
            "no offsets": lambda: broken(lambda h: h["x"].pop("data_offsets")),
        }
        for what, make in cases.items():
            make()
            with self.subTest(what), self.assertRaises(ValueError):
                pb.SafetensorsFile(self.path)

    def test_metadata_must_name_tensors_of_the_file(self):
        write_safetensors(self.path, {"x": ("F32", [1], struct.pack("<f", 1.0))},
                          {"tessera.inputs": '["x"]', "tessera.params": "{}", "tessera.outputs": '["y"]'})
        with self.assertRaisesRegex(ValueError, "'y'"):
            pb.SafetensorsFile(self.path).io_names()
        write_safetensors(self.path, {"x": ("F32", [1], struct.pack("<f", 1.0))}, {"tessera.inputs": '["x"]'})
        with self.assertRaisesRegex(ValueError, "tessera.params"):
            pb.SafetensorsFile(self.path).io_names()

    @unittest.skipIf(torch is None, NO_TORCH)
    def test_load_tensor_with_torch(self):
        self.write_io()
        st = pb.SafetensorsFile(self.path)
        w = pb.load_tensor(torch, st, "p_w")
        self.assertEqual(w.dtype, torch.bfloat16)
        self.assertEqual(w.float().tolist(), [1.0, -0.5, 256.0])
        x = pb.load_tensor(torch, st, "x")
        self.assertEqual(x.shape, (2, 2))
        self.assertEqual(x.tolist(), [[1.0, -2.0], [0.5, 3.25]])
        self.assertEqual(pb.load_tensor(torch, st, "ids").tolist(), [7, -1])
        self.assertEqual(pb.load_tensor(torch, st, "mask").tolist(), [True, False])
        self.assertEqual(pb.load_tensor(torch, st, "h").dtype, torch.float16)
        self.assertEqual(pb.load_tensor(torch, st, "out").shape, (0,))


class ToleranceTest(unittest.TestCase):
    def test_f32_atol_grows_with_the_square_root_of_the_reduction(self):
        self.assertEqual(pb.tolerance("float32", 1), (1e-4, 1e-5))
        self.assertEqual(pb.tolerance("float32", 64), (1e-4, 1e-5))
        rtol, atol = pb.tolerance("float32", 4096)
        self.assertEqual(rtol, 1e-4)
        self.assertAlmostEqual(atol, 8e-5)
        self.assertAlmostEqual(pb.tolerance("float32", 18944)[1], 1e-5 * math.sqrt(18944 / 64))

    def test_half_precision_tolerances_do_not_depend_on_the_reduction(self):
        self.assertEqual(pb.tolerance("bfloat16", 1), (2e-2, 2e-2))
        self.assertEqual(pb.tolerance("bfloat16", 18944), (2e-2, 2e-2))
        self.assertEqual(pb.tolerance("float16", 4096), (5e-3, 5e-3))
        with self.assertRaises(ValueError):
            pb.tolerance("int64", 1)

    def test_reduction_length(self):
        # A projection: the Linear fan-in; a norm: its width; attention: keys or head dim.
        self.assertEqual(pb.reduction_length("projection", 128, 0, "prefill", [2048, 2048], [2048]), 2048)
        self.assertEqual(pb.reduction_length("attention", 128, 0, "prefill", [], [128, 128, 128]), 128)
        self.assertEqual(pb.reduction_length("attention", 1, 2048, "decode", [], [128, 128, 128]), 2048)
        self.assertEqual(pb.reduction_length("softmax", 512, 0, "prefill", [], [512]), 512)
        self.assertEqual(pb.reduction_length("layer", 32, 0, "prefill", [4096, 14336], [4096, 128]), 14336)
        self.assertEqual(pb.reduction_length("elementwise", 2048, 0, "prefill", [], [64, 64]), 64)

    def test_verdict(self):
        ok = {"name": "a", "ok": True, "max_abs": 1e-6, "max_rel": 1e-5, "detail": "fine"}
        bad = {"name": "b", "ok": False, "max_abs": 0.5, "max_rel": 2.0, "detail": "3 values outside"}
        self.assertEqual(pb.verdict([ok])["status"], "pass")
        v = pb.verdict([ok, bad])
        self.assertEqual(v["status"], "fail")
        self.assertEqual((v["max_abs"], v["max_rel"]), (0.5, 2.0))
        self.assertEqual(v["detail"], "b: 3 values outside")
        self.assertEqual(pb.verdict([])["status"], "fail")
        shape = {"name": "c", "ok": False, "max_abs": None, "max_rel": None, "detail": "shape (2,)"}
        self.assertEqual(pb.verdict([ok, shape])["max_abs"], 1e-6)


@unittest.skipIf(torch is None, NO_TORCH)
class CompareTensorsTest(unittest.TestCase):
    def compare(self, ref, got, k=1):
        return pb.compare_tensors(torch, "out", ref, got, k)

    def test_within_and_outside_tolerance(self):
        torch.manual_seed(0)
        ref = torch.randn(1000)
        self.assertTrue(self.compare(ref, ref.clone())["ok"])
        self.assertTrue(self.compare(ref, ref * (1 + 5e-5))["ok"])  # inside rtol 1e-4
        r = self.compare(ref, ref * (1 + 1e-3))
        self.assertFalse(r["ok"])
        self.assertIn("values outside", r["detail"])
        one_wrong = ref.clone()
        one_wrong[17] += 0.01
        r = self.compare(ref, one_wrong)
        self.assertFalse(r["ok"])
        self.assertIn("1 of 1000", r["detail"])
        self.assertIn("flat index 17", r["detail"])
        self.assertAlmostEqual(r["max_abs"], 0.01, places=5)

    def test_atol_scales_with_the_output_rms(self):
        # Softmax-like values: tiny, and an error of 1e-6 is large for them.
        ref = torch.full((1000,), 1e-3)
        ref[0] = 0.0
        got = ref.clone()
        got[0] = 1e-6
        self.assertFalse(self.compare(ref, got)["ok"])
        got[0] = 1e-9
        self.assertTrue(self.compare(ref, got)["ok"])

    def test_long_reductions_get_a_larger_atol(self):
        ref = torch.ones(100)
        ref[0] = 0.0
        got = ref.clone()
        got[0] = 5e-5
        self.assertFalse(self.compare(ref, got, k=64)["ok"])
        self.assertTrue(self.compare(ref, got, k=4096)["ok"])

    def test_bf16(self):
        ref = torch.randn(256).to(torch.bfloat16)
        self.assertTrue(self.compare(ref, (ref.float() * 1.01).to(torch.bfloat16))["ok"])
        self.assertFalse(self.compare(ref, (ref.float() * 1.1).to(torch.bfloat16))["ok"])

    def test_nan_shape_dtype_and_integers(self):
        ref = torch.tensor([1.0, float("nan"), float("inf")])
        self.assertTrue(self.compare(ref, ref.clone())["ok"])
        self.assertFalse(self.compare(ref, torch.tensor([float("nan"), float("nan"), float("inf")]))["ok"])
        self.assertFalse(self.compare(ref, torch.tensor([1.0, float("nan"), -float("inf")]))["ok"])
        self.assertIn("shape", self.compare(ref, torch.zeros(2))["detail"])
        self.assertIn("dtype", self.compare(ref, ref.double())["detail"])
        ints = torch.tensor([1, 2, 3])
        self.assertTrue(self.compare(ints, ints.clone())["ok"])
        self.assertFalse(self.compare(ints, torch.tensor([1, 2, 4]))["ok"])


@unittest.skipIf(torch is None, NO_TORCH)
class ProgramOnCpuTest(unittest.TestCase):
    PROGRAM = ("import torch\nimport torch.nn as nn\nclass Block(nn.Module):\n    def __init__(self):\n"
               "        super().__init__()\n        self.proj = nn.Linear(8, 4, bias=True)\n"
               "    def forward(self, x, residual):\n        return residual + self.proj(x), x * 2\n"
               "Block()(torch.randn(3, 8), torch.randn(3, 4))\n")

    def test_build_and_call(self):
        callee, inputs, make_call = pb.build_program(torch, {"id": "t", "program": self.PROGRAM}, device="cpu")
        self.assertEqual([tuple(x.shape) for x in inputs], [(3, 8), (3, 4)])
        out = pb.flatten_outputs(make_call(callee)(*inputs))
        self.assertEqual(len(out), 2)
        self.assertTrue(torch.equal(out[1], inputs[0] * 2))

    def test_function_callee_with_constant_arguments(self):
        program = "import torch\ntorch.lerp(torch.randn(5), weight=0.25, end=torch.rand(5))\n"
        callee, inputs, make_call = pb.build_program(torch, {"id": "t", "program": program}, device="cpu")
        self.assertEqual(len(inputs), 2)   # end= is a keyword input, after the positional ones
        out = make_call(callee)(*inputs)
        self.assertTrue(torch.equal(out, torch.lerp(inputs[0], inputs[1], 0.25)))
        program = "import torch\ntorch.clamp(torch.randn(5), -0.5, max=0.25)\n"
        callee, inputs, make_call = pb.build_program(torch, {"id": "t", "program": program}, device="cpu")
        self.assertEqual(len(inputs), 1)
        self.assertTrue(torch.equal(make_call(callee)(*inputs), torch.clamp(inputs[0], -0.5, 0.25)))

    def test_load_io_replaces_inputs_and_parameters(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "t.safetensors")
            f32 = lambda n, start: struct.pack(f"<{n}f", *[start + i * 0.25 for i in range(n)])  # noqa: E731
            meta = {"tessera.inputs": '["x", "x_1"]', "tessera.outputs": '["add", "mul"]',
                    "tessera.params": '{"p_proj_weight": "proj.weight", "p_proj_bias": "proj.bias"}'}
            tensors = {"x": ("F32", [3, 8], f32(24, -3.0)), "x_1": ("F32", [3, 4], f32(12, 1.0)),
                       "p_proj_weight": ("F32", [4, 8], f32(32, -4.0)), "p_proj_bias": ("F32", [4], f32(4, 0.5)),
                       "add": ("F32", [3, 4], f32(12, 0.0)), "mul": ("F32", [3, 8], f32(24, 0.0))}
            write_safetensors(path, tensors, meta)
            callee, inputs, make_call = pb.build_program(torch, {"id": "t", "program": self.PROGRAM}, device="cpu")
            loaded, expected = pb.load_io(torch, callee, inputs, path, device="cpu")
            self.assertEqual(loaded[0][0, 1].item(), -2.75)
            self.assertEqual(callee.proj.bias.tolist(), [0.5, 0.75, 1.0, 1.25])
            self.assertEqual([n for n, _ in expected], ["add", "mul"])
            ref = pb.flatten_outputs(make_call(callee)(*loaded))
            want = loaded[1] + loaded[0] @ callee.proj.weight.T + callee.proj.bias
            self.assertTrue(torch.allclose(ref[0], want))
            # A parameter the file lacks, or a wrongly shaped input, is an error.
            del tensors["p_proj_bias"]
            meta["tessera.params"] = '{"p_proj_weight": "proj.weight"}'
            write_safetensors(path, tensors, meta)
            with self.assertRaisesRegex(ValueError, "proj.bias"):
                pb.load_io(torch, callee, inputs, path, device="cpu")
            tensors["p_proj_bias"] = ("F32", [4], f32(4, 0.5))
            tensors["x"] = ("F32", [4, 6], f32(24, -3.0))
            meta["tessera.params"] = '{"p_proj_weight": "proj.weight", "p_proj_bias": "proj.bias"}'
            write_safetensors(path, tensors, meta)
            with self.assertRaisesRegex(ValueError, "input 0"):
                pb.load_io(torch, callee, inputs, path, device="cpu")


class FakeTimer:
    """Stands in for the CUDA timer: calls the program once per column, returns a fixed time."""

    def __init__(self):
        self.calls = 0

    def graph(self, fn, inputs):
        fn(*inputs)
        self.calls += 1
        return 1.5

    plain = graph


@unittest.skipIf(torch is None, NO_TORCH)
class RunEntryOnCpuTest(unittest.TestCase):
    """run_entry end to end on the CPU, against a file in the --save-io format (bench/README.md)."""

    ENTRY = {"id": "tiny-prefill4-f32-block", "family": "projection", "model": "TinyLlama-1.1B",
             "phase": "prefill", "seq": 4, "kv": 0, "dtype": "f32", "tiers": ["full"],
             "program": ("import torch\nimport torch.nn as nn\nclass Block(nn.Module):\n"
                         "    def __init__(self):\n        super().__init__()\n"
                         "        self.norm = nn.RMSNorm(16, eps=1e-05)\n"
                         "        self.proj = nn.Linear(16, 8, bias=False)\n"
                         "    def forward(self, x, residual):\n"
                         "        return residual + self.proj(self.norm(x)), self.norm(x)\n"
                         "Block()(torch.randn(1, 4, 16), torch.randn(1, 4, 8))\n")}

    def args(self, io_dir):
        return type("Args", (), {"io_dir": io_dir, "mode": "default"})()

    def write_io(self, io_dir, perturb=0.0, dtype=torch.float32 if torch else None):
        """Tessera's side: inputs, parameters and outputs, computed here with PyTorch in float64."""
        gen = torch.Generator().manual_seed(1)
        x = torch.randn(1, 4, 16, generator=gen, dtype=torch.float64)
        res = torch.randn(1, 4, 8, generator=gen, dtype=torch.float64)
        nw = torch.randn(16, generator=gen, dtype=torch.float64)
        pw = torch.randn(8, 16, generator=gen, dtype=torch.float64) / 4
        normed = x * torch.rsqrt(x.square().mean(-1, keepdim=True) + 1e-05) * nw
        out = res + normed @ pw.T
        out[0, 0, 0] += perturb
        tensors = {}
        for name, t in (("x", x), ("x_1", res), ("p_norm_weight", nw), ("p_proj_weight", pw),
                        ("add", out), ("rms_norm", normed)):
            t = t.to(dtype).contiguous()
            code = {torch.float32: "F32", torch.bfloat16: "BF16"}[dtype]
            raw = t.view(torch.int16).numpy().tobytes() if dtype == torch.bfloat16 else t.numpy().tobytes()
            tensors[name] = (code, list(t.shape), raw)
        meta = {"tessera.inputs": json.dumps(["x", "x_1"]), "tessera.outputs": json.dumps(["add", "rms_norm"]),
                "tessera.params": json.dumps({"p_norm_weight": "norm.weight", "p_proj_weight": "proj.weight"}),
                "tessera.program": self.ENTRY["program"]}
        write_safetensors(os.path.join(io_dir, self.ENTRY["id"] + ".safetensors"), tensors, meta)

    def run_entry(self, io_dir, entry=None):
        timer = FakeTimer()
        result = pb.run_entry(torch, entry or self.ENTRY, self.args(io_dir), timer, device="cpu",
                              compile_fn=lambda fn: fn)
        self.assertEqual(timer.calls, 4)
        for column in ("eager_us", "compiled_us", "eager_plain_us", "compiled_plain_us"):
            self.assertEqual(result[column], 1.5)
        self.assertIsNotNone(result["compile_s"])
        self.assertEqual(result["errors"], [])
        json.dumps(pb.json_safe(result), allow_nan=False)
        return result

    def test_without_io_dir_the_check_is_skipped(self):
        self.assertEqual(self.run_entry(None)["check"]["status"], "skipped")
        with tempfile.TemporaryDirectory() as d:
            check = self.run_entry(d)["check"]
            self.assertEqual(check["status"], "skipped")
            self.assertIn("tiny-prefill4-f32-block.safetensors", check["detail"])

    def test_matching_outputs_pass(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_io(d)
            check = self.run_entry(d)["check"]
            self.assertEqual(check["status"], "pass", check["detail"])
            self.assertLess(check["max_abs"], 1e-5)
            self.assertIn("add:", check["detail"])
            self.assertIn("rms_norm:", check["detail"])

    def test_a_wrong_value_fails(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_io(d, perturb=1e-2)
            check = self.run_entry(d)["check"]
            self.assertEqual(check["status"], "fail")
            self.assertIn("add: ", check["detail"])
            self.assertIn("1 of 32 values outside, worst at flat index 0", check["detail"])

    def test_bf16(self):
        entry = dict(self.ENTRY, id="tiny-prefill4-bf16-block", dtype="bf16",
                     program=self.ENTRY["program"].replace("eps=1e-05)", "eps=1e-05, dtype=torch.bfloat16)")
                     .replace("bias=False)", "bias=False, dtype=torch.bfloat16)")
                     .replace("16), torch.randn(1, 4, 8))", "16, dtype=torch.bfloat16), "
                              "torch.randn(1, 4, 8, dtype=torch.bfloat16))"))
        saved = self.ENTRY
        try:
            self.ENTRY = entry
            with tempfile.TemporaryDirectory() as d:
                self.write_io(d, dtype=torch.bfloat16)
                check = self.run_entry(d, entry)["check"]
                self.assertEqual(check["status"], "pass", check["detail"])
                self.write_io(d, perturb=0.5, dtype=torch.bfloat16)
                self.assertEqual(self.run_entry(d, entry)["check"]["status"], "fail")
        finally:
            self.ENTRY = saved

    def test_a_file_for_another_program_fails_with_the_reason(self):
        with tempfile.TemporaryDirectory() as d:
            self.write_io(d)
            entry = dict(self.ENTRY)
            entry["program"] = entry["program"].replace("torch.randn(1, 4, 8))", "torch.randn(1, 4, 8), "
                                                        "torch.randn(2))").replace(
                "def forward(self, x, residual):", "def forward(self, x, residual, extra):")
            check = self.run_entry(d, entry)["check"]
            self.assertEqual(check["status"], "fail")
            self.assertIn("2 inputs in", check["detail"])


class ReportAndCommandLineTest(unittest.TestCase):
    def test_json_safe(self):
        self.assertEqual(pb.json_safe({"a": [1.0, float("inf")], "b": float("nan"), "c": "x"}),
                         {"a": [1.0, None], "b": None, "c": "x"})

    def test_helpers(self):
        self.assertEqual(pb.median_us([0.003, 0.001, 0.002]), 2.0)
        self.assertEqual(pb.flatten_outputs((1, [2, (3,)], 4)), [1, 2, 3, 4])
        self.assertEqual(pb.flatten_outputs(5), [5])
        self.assertEqual(pb.COMPILE_MODES["max-autotune"], "max-autotune-no-cudagraphs")

    def test_resume_keeps_results_of_the_same_settings(self):
        report = {"device": "H100", "torch_version": "2.5", "cuda_version": "12.4", "mode": "default",
                  "iterations": 100, "warmup": 10, "l2_bytes": 52428800, "entries": []}
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "o.json")
            earlier = dict(report, entries=[{"id": "a", "errors": []}, {"id": "b", "errors": ["OOM"]},
                                            {"id": "gone", "errors": []}])
            with open(path, "w") as f:
                json.dump(earlier, f)
            done = pb.resumed_entries(path, report)
            self.assertEqual(sorted(done), ["a", "gone"])   # b raised: it runs again
            with self.assertRaisesRegex(ValueError, "iterations: 100"):
                pb.resumed_entries(path, dict(report, iterations=200))
            with open(path, "w") as f:
                f.write("[]")
            with self.assertRaisesRegex(ValueError, "not a pytorch_baseline report"):
                pb.resumed_entries(path, report)
        results = {"gone": {"id": "gone"}, "c": {"id": "c"}, "a": {"id": "a"}}
        self.assertEqual([r["id"] for r in pb.in_suite_order(results, ["a", "b", "c"])], ["a", "c", "gone"])

    def run_main(self, argv):
        err = io.StringIO()
        with redirect_stderr(err):
            try:
                code = pb.main(argv)
            except SystemExit as e:
                code = e.code
        return code, err.getvalue()

    def test_usage_errors(self):
        with tempfile.TemporaryDirectory() as d:
            suite = os.path.join(d, "s.yaml")
            with open(suite, "w") as f:
                f.write(suite_text(ENTRY.format(id="a", tiers="full")))
            out = os.path.join(d, "o.json")
            self.assertEqual(self.run_main(["--suite", suite])[0], 2)  # --out is required
            code, err = self.run_main(["--suite", suite, "--out", out, "--iterations", "0"])
            self.assertEqual(code, 2)
            code, err = self.run_main(["--suite", suite, "--out", out, "--entries", "nope"])
            self.assertEqual(code, 1)
            self.assertIn("no entry with id nope", err)
            code, err = self.run_main(["--suite", os.path.join(d, "missing.yaml"), "--out", out])
            self.assertEqual(code, 1)
            code, err = self.run_main(["--suite", suite, "--out", out, "--tier", "quick"])
            self.assertEqual((code, "no entries selected" in err), (2, True))
            self.assertFalse(os.path.exists(out))

    def test_without_a_gpu_exits_2_and_writes_nothing(self):
        if torch is not None and torch.cuda.is_available():
            self.skipTest("a GPU is present")
        with tempfile.TemporaryDirectory() as d:
            suite = os.path.join(d, "s.yaml")
            with open(suite, "w") as f:
                f.write(suite_text(ENTRY.format(id="a", tiers="full")))
            out = os.path.join(d, "o.json")
            code, err = self.run_main(["--suite", suite, "--out", out])
            self.assertEqual(code, 2)
            self.assertRegex(err, "PyTorch is not installed|no CUDA driver/GPU")
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
