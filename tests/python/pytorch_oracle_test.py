"""Tests of tests/pytorch_oracle/oracle.py: that it reports a disagreement (wrong values, a wrong
dtype, an integer off by a little) and agreement, with a stand-in `tessera` that writes a chosen
--save-io file; and that without PyTorch it exits 77 (skipped) with the reason. The parts that run
programs in PyTorch are skipped, with the reason shown, when torch is not importable.

    python3 -m unittest discover -s tests/python -p 'pytorch_oracle_test.py' -v
"""

import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ORACLE = os.path.join(ROOT, "tests", "pytorch_oracle", "oracle.py")
sys.dont_write_bytecode = True

try:
    import torch
except ImportError:
    torch = None
NO_TORCH = "PyTorch is not installed: the oracle's comparisons are not tested here"

# A stand-in for `tessera run --target sim --save-io FILE -c PROGRAM`: writes the safetensors file
# described by the JSON in $FAKE_IO (tensors {name: [dtype, shape, struct format, values]} and the
# metadata), like Tessera's, and exits with $FAKE_RC.
FAKE_TESSERA = r'''#!{python}
import json, os, struct, sys
spec = json.loads(os.environ["FAKE_IO"])
path = sys.argv[sys.argv.index("--save-io") + 1]
header, blobs, offset = {{"__metadata__": spec["metadata"]}}, [], 0
for name, (dtype, shape, fmt, values) in spec["tensors"].items():
    raw = struct.pack("<%d%s" % (len(values), fmt), *values)
    header[name] = {{"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}}
    blobs.append(raw)
    offset += len(raw)
text = json.dumps(header).encode()
with open(path, "wb") as f:
    f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
sys.exit(int(os.environ.get("FAKE_RC", "0")))
'''


def io_spec(inputs, outputs, params=None):
    tensors = dict(inputs)
    tensors.update(outputs)
    for name, t in (params or {}).items():
        tensors[name] = t[1]
    return {"tensors": tensors, "metadata": {
        "tessera.inputs": json.dumps(list(inputs)), "tessera.outputs": json.dumps(list(outputs)),
        "tessera.params": json.dumps({name: t[0] for name, t in (params or {}).items()})}}


class OracleTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.fake = os.path.join(self.tmp.name, "tessera")
        with open(self.fake, "w") as f:
            f.write(FAKE_TESSERA.format(python=sys.executable))
        os.chmod(self.fake, 0o755)

    def tearDown(self):
        self.tmp.cleanup()

    def oracle(self, program, spec, rc=0):
        corpus = os.path.join(self.tmp.name, "corpus.json")
        with open(corpus, "w") as f:
            json.dump([{"name": "P", "program": program}], f)
        env = dict(os.environ, FAKE_IO=json.dumps(spec), FAKE_RC=str(rc))
        env.pop("TESSERA_TORCH_PYTHON", None)
        done = subprocess.run([sys.executable, "-B", ORACLE, "--tessera", self.fake, "--corpus-json", corpus],
                              capture_output=True, text=True, env=env, timeout=120)
        return done.returncode, done.stdout + done.stderr

    @unittest.skipIf(torch is not None, "PyTorch is installed here: the no-torch path is not taken")
    def test_without_torch_the_test_is_skipped_with_the_reason(self):
        rc, out = self.oracle("torch.randn(2) + 1", io_spec({}, {}))
        self.assertEqual(rc, 77, out)
        self.assertIn("skipped: PyTorch is not importable", out)

    @unittest.skipIf(torch is None, NO_TORCH)
    def test_agreement_and_wrong_values(self):
        x = ("F32", [2], "f", [0.5, -1.0])
        rc, out = self.oracle("torch.randn(2) + 1", io_spec({"x": x}, {"add": ("F32", [2], "f", [1.5, 0.0])}))
        self.assertEqual(rc, 0, out)
        self.assertIn("1 programs ran, 1 agreed", out)
        rc, out = self.oracle("torch.randn(2) + 1", io_spec({"x": x}, {"add": ("F32", [2], "f", [1.5, 0.01])}))
        self.assertEqual(rc, 1, out)
        self.assertIn("DISAGREE", out)

    @unittest.skipIf(torch is None, NO_TORCH)
    def test_integers_must_be_exact_and_dtypes_equal(self):
        program = "torch.full((2,), 16777217, dtype=torch.int64) + 1"
        a = ("I64", [2], "q", [16777217, 16777217])
        rc, out = self.oracle(program, io_spec({"a": a}, {"add": ("I64", [2], "q", [16777218, 16777218])}))
        self.assertEqual(rc, 0, out)
        rc, out = self.oracle(program, io_spec({"a": a}, {"add": ("I64", [2], "q", [16777216, 16777218])}))
        self.assertEqual(rc, 1, out)
        self.assertIn("1 of 2 values differ", out)
        rc, out = self.oracle(program, io_spec({"a": a}, {"add": ("F32", [2], "f", [16777218, 16777218])}))
        self.assertEqual(rc, 1, out)
        self.assertIn("dtype torch.float32, PyTorch gives torch.int64", out)

    @unittest.skipIf(torch is None, NO_TORCH)
    def test_parameters_are_loaded_and_a_failed_tessera_check_disagrees(self):
        program = "nn.Linear(2, 1, bias=False)(torch.randn(2))"
        spec = io_spec({"x": ("F32", [2], "f", [1.0, 2.0])}, {"linear": ("F32", [1], "f", [0.5])},
                       {"p_weight": ("weight", ("F32", [1, 2], "f", [0.25, 0.125]))})
        rc, out = self.oracle(program, spec)
        self.assertEqual(rc, 0, out)
        rc, out = self.oracle(program, spec, rc=1)
        self.assertEqual(rc, 1, out)
        self.assertIn("Tessera's own check against its reference failed", out)
        # An input the program does not create the way the file says.
        spec["tensors"]["x"] = ("F32", [3], "f", [1.0, 2.0, 3.0])
        rc, out = self.oracle(program, spec)
        self.assertEqual(rc, 1, out)
        self.assertIn("input 'x'", out)


if __name__ == "__main__":
    unittest.main()
