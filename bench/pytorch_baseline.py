#!/usr/bin/env python3
"""PyTorch baseline for the LLM kernel suite (bench/suite.yaml); the method is in bench/README.md,
"PyTorch baseline".

    python3 bench/pytorch_baseline.py --suite bench/suite.yaml [--tier quick|full] [--entries ID,...]
        [--io-dir DIR] [--mode default|max-autotune] [--iterations N] --out FILE.json

For every selected entry: run the program's preamble, build the module (or function) its last
expression calls and the inputs that call creates, on the GPU; time PyTorch eager and torch.compile
(median of CUDA-graph replays with L2 flushed before each, plus plain launches); and, when --io-dir
holds `<id>.safetensors` written by `tessera run --save-io`, run PyTorch on Tessera's inputs and
parameters and compare with Tessera's outputs.

Exit status: 0 when FILE.json was written (failed checks and entries that raised are recorded in
it), 1 for a suite that cannot be read, 2 for a usage error or no PyTorch / CUDA.

Everything above `main` that does not take torch tensors runs without PyTorch (suite reading, the
program split, the safetensors reader, the tolerance policy); tests/python/pytorch_baseline_test.py
tests it.
"""

import argparse
import ast
import json
import math
import os
import re
import statistics
import struct
import sys
import time

# ---- the suite file --------------------------------------------------------------------------------

FAMILIES = ("norm", "softmax", "elementwise", "projection", "attention", "mlp", "layer")
MODELS = ("TinyLlama-1.1B", "Qwen2.5-7B", "Llama-3-8B")
DTYPES = ("f32", "bf16")
TIERS = ("quick", "full")
ID_PATTERN = re.compile(r"^[a-z0-9_.-]+$")
REQUIRED_KEYS = ("id", "family", "model", "phase", "seq", "kv", "dtype", "tiers", "program")


class SuiteError(Exception):
    """A suite file that does not follow the format (bench/README.md, "Suite")."""


def _scalar(text, where):
    text = text.strip()
    if text[:1] not in ("'", '"') and " #" in text:
        text = text[: text.index(" #")].rstrip()   # a trailing comment
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        return [_scalar(part, where) for part in inner.split(",")] if inner else []
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    if re.fullmatch(r"-?[0-9]*\.[0-9]+([eE][-+]?[0-9]+)?|-?[0-9]+[eE][-+]?[0-9]+", text):
        return float(text)
    if text in ("true", "false"):
        return text == "true"
    if text == "" or text[0] in "{&*!|>%@`":
        raise SuiteError(f"{where}: unsupported value '{text}'")
    return text


def parse_suite_text(text, name="suite.yaml"):
    """Parses the subset of YAML the suite uses: `version: N`, `entries:` holding a list of mappings
    whose values are plain or quoted scalars, flow lists `[a, b]` and literal blocks `|` (clip).
    Raises SuiteError naming the line for anything else, so that a suite edited beyond this subset
    fails loudly instead of being misread. PyYAML is not required."""
    lines = text.split("\n")
    top = {}
    entries = None
    current = None
    i = 0

    def where(n):
        return f"{name}:{n + 1}"

    def indent_of(line):
        return len(line) - len(line.lstrip(" "))

    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            i += 1
            continue
        if "\t" in line[: indent_of(line) + 1]:
            raise SuiteError(f"{where(i)}: tab in indentation")
        ind = indent_of(line)
        if ind == 0:
            key, sep, value = stripped.partition(":")
            if not sep:
                raise SuiteError(f"{where(i)}: expected 'key: value'")
            if key == "entries":
                if value.strip():
                    raise SuiteError(f"{where(i)}: 'entries:' must be followed by a list")
                entries = []
            else:
                top[key] = _scalar(value, where(i))
            current = None
            i += 1
            continue
        if entries is None:
            raise SuiteError(f"{where(i)}: indented line outside 'entries:'")
        body = stripped
        if body.startswith("- "):
            current = {}
            entries.append((i, current))
            body = body[2:].strip()
            key_indent = ind + 2
        elif current is None:
            raise SuiteError(f"{where(i)}: expected '- ' starting an entry")
        else:
            key_indent = ind
        key, sep, value = body.partition(":")
        key = key.strip()
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
            raise SuiteError(f"{where(i)}: expected 'key: value'")
        if key in current:
            raise SuiteError(f"{where(i)}: key '{key}' given twice")
        value = value.strip()
        if value in ("|", "|-"):
            block = []
            j = i + 1
            while j < len(lines) and (not lines[j].strip() or indent_of(lines[j]) > key_indent):
                block.append(lines[j])
                j += 1
            nonblank = [b for b in block if b.strip()]
            if not nonblank:
                raise SuiteError(f"{where(i)}: empty block for '{key}'")
            base = indent_of(nonblank[0])
            out = []
            for n, b in enumerate(block):
                if b.strip() and indent_of(b) < base:
                    raise SuiteError(f"{where(i + 1 + n)}: block line indented less than its first line")
                out.append(b[base:] if b.strip() else "")
            content = "\n".join(out).rstrip("\n")
            current[key] = content if value == "|-" else content + "\n"
            i = j
            continue
        current[key] = _scalar(value, where(i))
        i += 1
    if entries is None:
        raise SuiteError(f"{name}: no 'entries:' list")
    top["entries"] = [e for _, e in entries]
    top["_lines"] = [n + 1 for n, _ in entries]
    return top


def validate_suite(suite, name="suite.yaml"):
    """Checks the fields every consumer relies on; returns the list of entries."""
    if suite.get("version") != 1:
        raise SuiteError(f"{name}: 'version: 1' expected, got {suite.get('version')!r}")
    seen = set()
    for line, e in zip(suite["_lines"], suite["entries"]):
        at = f"{name}:{line}"
        for key in REQUIRED_KEYS:
            if key not in e:
                raise SuiteError(f"{at}: entry lacks '{key}'")
        if not isinstance(e["id"], str) or not ID_PATTERN.match(e["id"]):
            raise SuiteError(f"{at}: id {e['id']!r} is not [a-z0-9_.-]+")
        if e["id"] in seen:
            raise SuiteError(f"{at}: id '{e['id']}' appears twice")
        seen.add(e["id"])
        for key, allowed in (("family", FAMILIES), ("model", MODELS), ("dtype", DTYPES),
                             ("phase", ("prefill", "decode"))):
            if e[key] not in allowed:
                raise SuiteError(f"{at}: {key} '{e[key]}' is not one of {', '.join(allowed)}")
        if not isinstance(e["tiers"], list) or "full" not in e["tiers"] or any(t not in TIERS for t in e["tiers"]):
            raise SuiteError(f"{at}: tiers must be [full] or [quick, full], got {e['tiers']!r}")
        for key in ("seq", "kv"):
            if not isinstance(e[key], int) or e[key] < 0:
                raise SuiteError(f"{at}: {key} must be a non-negative integer")
        if e["phase"] == "decode" and (e["seq"] != 1 or e["kv"] < 1):
            raise SuiteError(f"{at}: a decode entry has seq 1 and kv > 0")
        if e["phase"] == "prefill" and (e["seq"] < 1 or e["kv"] != 0):
            raise SuiteError(f"{at}: a prefill entry has seq > 0 and kv 0")
        if "flops" in e and (not isinstance(e["flops"], int) or e["flops"] <= 0):
            raise SuiteError(f"{at}: flops must be a positive integer")
    return suite["entries"]


def load_suite(path):
    with open(path, encoding="utf-8") as f:
        return validate_suite(parse_suite_text(f.read(), path), path)


def select_entries(entries, tier=None, ids=None):
    """--tier and --entries: entries in suite order. Unknown ids raise SuiteError."""
    chosen = entries
    if ids:
        known = {e["id"] for e in entries}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise SuiteError("no entry with id " + ", ".join(unknown))
        wanted = set(ids)
        chosen = [e for e in chosen if e["id"] in wanted]
    if tier:
        chosen = [e for e in chosen if tier in e["tiers"]]
    return chosen


# ---- the program: preamble, callee and inputs ------------------------------------------------------

INPUT_FACTORIES = ("randn", "rand", "randint", "zeros", "ones", "full")


def _is_input_call(node):
    """torch.randn(...) and the other factories, written as an attribute of the name `torch`."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and
            node.func.attr in INPUT_FACTORIES and isinstance(node.func.value, ast.Name) and
            node.func.value.id == "torch")


class SplitProgram:
    """A program cut at its last expression `CALLEE(ARG, ..., KEY=VALUE, ...)`.

    preamble: source of every statement before it. callee: source of CALLEE. args: one
    (kind, source) per positional argument; keywords: one (name, kind, source) per keyword; kind is
    "input" for a direct torch.randn/rand/randint/zeros/ones/full call (the program's inputs, in
    source order, as Tessera numbers them) and "const" for anything else."""

    def __init__(self, preamble, callee, args, keywords):
        self.preamble = preamble
        self.callee = callee
        self.args = args
        self.keywords = keywords

    def input_sources(self):
        return ([src for kind, src in self.args if kind == "input"] +
                [src for _, kind, src in self.keywords if kind == "input"])


def split_program(text):
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise SuiteError(f"program is not valid Python: line {e.lineno}: {e.msg}") from None
    if not tree.body:
        raise SuiteError("program is empty")
    last = tree.body[-1]
    if not isinstance(last, ast.Expr) or not isinstance(last.value, ast.Call):
        raise SuiteError("the program's last statement must be a call expression")
    call = last.value
    # Everything before the last statement, also when it shares a line (`a = 1; f(a)`); col_offset
    # counts UTF-8 bytes.
    lines = text.splitlines(keepends=True)
    head = lines[last.lineno - 1].encode("utf-8")[: last.col_offset].decode("utf-8")
    preamble = "".join(lines[: last.lineno - 1]) + head
    callee = ast.get_source_segment(text, call.func)
    args = []
    for a in call.args:
        if isinstance(a, ast.Starred):
            raise SuiteError("*args in the final call are not supported")
        args.append(("input" if _is_input_call(a) else "const", ast.get_source_segment(text, a)))
    keywords = []
    for k in call.keywords:
        if k.arg is None:
            raise SuiteError("**kwargs in the final call are not supported")
        keywords.append((k.arg, "input" if _is_input_call(k.value) else "const", ast.get_source_segment(text, k.value)))
    if not any(kind == "input" for kind, _ in args) and not any(kind == "input" for _, kind, _ in keywords):
        raise SuiteError("the final call creates no input (torch.randn(...) etc. as a direct argument)")
    return SplitProgram(preamble, callee, args, keywords)


# ---- safetensors (the --save-io file) --------------------------------------------------------------

# dtype name in the file -> (bytes per element, torch dtype attribute name)
SAFETENSORS_DTYPES = {
    "F64": (8, "float64"), "F32": (4, "float32"), "F16": (2, "float16"), "BF16": (2, "bfloat16"),
    "I64": (8, "int64"), "I32": (4, "int32"), "I16": (2, "int16"), "I8": (1, "int8"),
    "U8": (1, "uint8"), "BOOL": (1, "bool"),
}


class TensorRecord:
    def __init__(self, name, dtype, shape, begin, end):
        self.name, self.dtype, self.shape, self.begin, self.end = name, dtype, shape, begin, end

    def numel(self):
        return math.prod(self.shape)


class SafetensorsFile:
    """The header of a safetensors file: 8-byte little-endian header length, a JSON header
    {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}, then the data
    (offsets relative to its start). Checks every record against the file size."""

    def __init__(self, path):
        self.path = path
        size = os.path.getsize(path)
        with open(path, "rb") as f:
            head = f.read(8)
            if len(head) != 8:
                raise ValueError(f"{path}: shorter than a safetensors header")
            (n,) = struct.unpack("<Q", head)
            if n > size - 8:
                raise ValueError(f"{path}: header length {n} runs past the end of the file")
            try:
                header = json.loads(f.read(n).decode("utf-8"))
            except (UnicodeDecodeError, ValueError) as e:
                raise ValueError(f"{path}: header is not JSON: {e}") from None
        if not isinstance(header, dict):
            raise ValueError(f"{path}: header is not a JSON object")
        self.data_start = 8 + n
        self.metadata = header.pop("__metadata__", {}) or {}
        self.tensors = {}
        for name, h in header.items():
            try:
                dtype, shape, (begin, end) = h["dtype"], [int(d) for d in h["shape"]], h["data_offsets"]
            except (KeyError, TypeError, ValueError):
                raise ValueError(f"{path}: tensor '{name}' lacks dtype, shape or data_offsets") from None
            if dtype not in SAFETENSORS_DTYPES:
                raise ValueError(f"{path}: tensor '{name}' has unsupported dtype {dtype}")
            rec = TensorRecord(name, dtype, shape, int(begin), int(end))
            if rec.end - rec.begin != rec.numel() * SAFETENSORS_DTYPES[dtype][0] or rec.begin < 0:
                raise ValueError(f"{path}: tensor '{name}': data_offsets [{begin}, {end}] do not hold "
                                 f"{rec.numel()} {dtype} values")
            if self.data_start + rec.end > size:
                raise ValueError(f"{path}: tensor '{name}' runs past the end of the file")
            self.tensors[name] = rec

    def raw(self, name):
        rec = self.tensors[name]
        with open(self.path, "rb") as f:
            f.seek(self.data_start + rec.begin)
            return f.read(rec.end - rec.begin)

    def json_metadata(self, key):
        """A metadata value that --save-io writes as JSON text (tessera.inputs and the others)."""
        if key not in self.metadata:
            raise ValueError(f"{self.path}: no '{key}' in __metadata__")
        try:
            return json.loads(self.metadata[key])
        except ValueError:
            raise ValueError(f"{self.path}: __metadata__ '{key}' is not JSON") from None

    def io_names(self):
        """(input names in order, {param name: dotted path}, output names in order), each checked
        to name a tensor of the file."""
        inputs = self.json_metadata("tessera.inputs")
        params = self.json_metadata("tessera.params")
        outputs = self.json_metadata("tessera.outputs")
        if not isinstance(inputs, list) or not isinstance(outputs, list) or not isinstance(params, dict):
            raise ValueError(f"{self.path}: tessera.inputs/outputs must be lists and tessera.params an object")
        for n in list(inputs) + list(params) + list(outputs):
            if n not in self.tensors:
                raise ValueError(f"{self.path}: metadata names '{n}' but the file has no such tensor")
        return inputs, params, outputs

    def values(self, name):
        """Plain-Python decoding (small tensors and tests): a flat list in row-major order."""
        rec = self.tensors[name]
        data = self.raw(name)
        n = rec.numel()
        if rec.dtype == "BF16":
            halves = struct.unpack(f"<{n}H", data)
            return list(struct.unpack(f"<{n}f", struct.pack(f"<{n}I", *(h << 16 for h in halves))))
        fmt = {"F64": "d", "F32": "f", "F16": "e", "I64": "q", "I32": "i", "I16": "h", "I8": "b",
               "U8": "B", "BOOL": "?"}[rec.dtype]
        return list(struct.unpack(f"<{n}{fmt}", data))


def load_tensor(torch, st, name):
    """One tensor of a SafetensorsFile as a CPU torch tensor (bf16 included)."""
    rec = st.tensors[name]
    dtype = getattr(torch, SAFETENSORS_DTYPES[rec.dtype][1])
    if rec.numel() == 0:
        return torch.empty(rec.shape, dtype=dtype)
    return torch.frombuffer(bytearray(st.raw(name)), dtype=dtype).reshape(rec.shape)


# ---- tolerances ------------------------------------------------------------------------------------

# rtol and atol per output dtype. atol is in units of the output's RMS: the programs' values have
# the scale of their inputs (randn data, Linear weights scaled 1/sqrt(fan_in)), and a result's
# rounding error is proportional to the magnitude of what it is computed from — so an absolute
# atol would be too loose for softmax probabilities (~1/keys) and too tight for residual sums.
TOLERANCES = {"float32": (1e-4, 1e-5), "bfloat16": (2e-2, 2e-2), "float16": (5e-3, 5e-3),
              "float64": (1e-9, 1e-12)}
REFERENCE_REDUCTION = 64   # f32 reductions up to this length get atol unscaled


def reduction_length(family, seq, kv, phase, fan_ins, input_last_dims):
    """The longest sum that feeds an output: Linear fan-in and norm width (fan_ins), the last dim of
    every input (the reduced dim of norms, softmax and q·k), and for attention, softmax and whole
    layers the key count (prefill: seq, decode: kv)."""
    k = max([1] + list(fan_ins) + list(input_last_dims))
    if family in ("attention", "softmax", "layer"):
        k = max(k, seq if phase == "prefill" else kv)
    return k


def tolerance(dtype_name, reduction):
    """(rtol, atol in units of the output's RMS) for an output of dtype `dtype_name` (torch's name)
    computed through sums of up to `reduction` terms.

    f32: two correct implementations differ by summation order alone; for a sum of K terms of unit
    scale that difference grows like eps * sqrt(K) (random-walk rounding), so atol grows with
    sqrt(K / 64): 1e-5 up to K = 64, 8e-5 at K = 4096, 1.7e-4 at K = 18944 (Qwen2.5's MLP) —
    about 10 standard deviations of that noise, far below what a wrong index or a missed term
    gives (O(1)). bf16 and f16: both sides accumulate in f32 and round the result, so the error is
    a few ulps of the output (bf16 2^-8 = 0.4 %, f16 2^-11) whatever K is; 2e-2 and 5e-3 allow for
    intermediates PyTorch rounds to bf16/f16 that a fused kernel keeps in f32. f64: both sides
    compute in double; only the summation order differs (~1e-16 relative), so 1e-9 and 1e-12 RMS
    are tight yet far above that noise."""
    if dtype_name not in TOLERANCES:
        raise ValueError(f"no tolerance for dtype {dtype_name}")
    rtol, atol = TOLERANCES[dtype_name]
    if dtype_name == "float32":
        atol *= max(1.0, math.sqrt(reduction / REFERENCE_REDUCTION))
    return rtol, atol


def verdict(results):
    """Folds per-output comparisons [{name, ok, max_abs, max_rel, detail}] into the entry's check."""
    if not results:
        return {"status": "fail", "max_abs": None, "max_rel": None, "detail": "no outputs to compare"}
    failed = [r for r in results if not r["ok"]]
    max_abs = max((r["max_abs"] for r in results if r["max_abs"] is not None), default=None)
    max_rel = max((r["max_rel"] for r in results if r["max_rel"] is not None), default=None)
    detail = "; ".join(f"{r['name']}: {r['detail']}" for r in (failed or results))
    return {"status": "fail" if failed else "pass", "max_abs": max_abs, "max_rel": max_rel, "detail": detail}


def compare_tensors(torch, name, ref, got, reduction):
    """PyTorch's output `ref` against Tessera's `got`: pass when every element has
    |got - ref| <= atol * rms(ref) + rtol * |ref| (NaN only where ref is NaN, infinities equal).
    max_rel is max |got - ref| / max(|ref|, rms(ref)), which stays finite where ref crosses zero."""
    if tuple(ref.shape) != tuple(got.shape):
        return {"name": name, "ok": False, "max_abs": None, "max_rel": None,
                "detail": f"shape {tuple(got.shape)}, PyTorch gives {tuple(ref.shape)}"}
    if ref.dtype != got.dtype:
        return {"name": name, "ok": False, "max_abs": None, "max_rel": None,
                "detail": f"dtype {got.dtype}, PyTorch gives {ref.dtype}"}
    if not ref.is_floating_point():
        mismatches = int((ref != got.to(ref.device)).sum())
        return {"name": name, "ok": mismatches == 0, "max_abs": None, "max_rel": None,
                "detail": f"{mismatches} of {ref.numel()} values differ"}
    rtol, atol = tolerance(str(ref.dtype).replace("torch.", ""), reduction)
    r = ref.double()
    g = got.to(ref.device).double()
    ref_nan, got_nan = torch.isnan(r), torch.isnan(g)
    if bool((ref_nan != got_nan).any()):
        return {"name": name, "ok": False, "max_abs": None, "max_rel": None,
                "detail": f"NaN in {int(got_nan.sum())} values, PyTorch has {int(ref_nan.sum())}"}
    finite = torch.isfinite(r)
    if bool((torch.isinf(r) & (r != g)).any()):
        return {"name": name, "ok": False, "max_abs": None, "max_rel": None, "detail": "infinities differ"}
    r = torch.where(finite, r, torch.zeros_like(r))
    g = torch.where(finite, g, torch.zeros_like(g))
    if r.numel() == 0:
        return {"name": name, "ok": True, "max_abs": 0.0, "max_rel": 0.0, "detail": "empty"}
    rms = float(r.square().mean().sqrt())
    diff = (g - r).abs()
    bound = atol * rms + rtol * r.abs()
    bad = int((diff > bound).sum())
    max_abs = float(diff.max())
    max_rel = float((diff / torch.clamp(r.abs(), min=rms if rms > 0 else 1.0)).max())
    detail = (f"max_abs {max_abs:.3g}, max_rel {max_rel:.3g}, rms {rms:.3g}, rtol {rtol:g}, "
              f"atol {atol:.3g}*rms (K={reduction})")
    if bad:
        worst = int((diff - bound).argmax())
        detail += f"; {bad} of {r.numel()} values outside, worst at flat index {worst}"
    return {"name": name, "ok": bad == 0, "max_abs": max_abs, "max_rel": max_rel, "detail": detail}


# ---- timing ----------------------------------------------------------------------------------------

def median_us(ms_list):
    return statistics.median(ms_list) * 1000.0


def flatten_outputs(value):
    """The program's result as a flat list of tensors (tuples and lists flattened in order)."""
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(flatten_outputs(v))
        return out
    return [value]


class Timer:
    """CUDA-event timing of one callable: median over `iterations` of a CUDA-graph replay and of a
    plain call, each preceded (outside the timed region) by a write of 2x the L2 size."""

    def __init__(self, torch, l2_bytes, iterations, warmup):
        self.torch = torch
        self.iterations = iterations
        self.warmup = warmup
        # int32 elements covering 2 x L2; written with fill_ (a plain store kernel) before every run.
        self.flush_buffer = torch.empty(max(1, (2 * l2_bytes) // 4), dtype=torch.int32, device="cuda")

    def _flush(self, i):
        self.flush_buffer.fill_(i)

    def _timed(self, run):
        torch = self.torch
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(self.iterations)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(self.iterations)]
        for i in range(self.warmup):
            self._flush(i)
            run()
        for i in range(self.iterations):
            self._flush(i)
            starts[i].record()
            run()
            ends[i].record()
        torch.cuda.synchronize()
        return median_us([s.elapsed_time(e) for s, e in zip(starts, ends)])

    def plain(self, fn, inputs):
        return self._timed(lambda: fn(*inputs))

    def graph(self, fn, inputs):
        """Captures one call of fn as a CUDA graph (after warm-up calls on a side stream, as capture
        requires) and times replays."""
        torch = self.torch
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(3):
                fn(*inputs)
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = fn(*inputs)
        try:
            return self._timed(graph.replay)
        finally:
            del static_out, graph


# ---- one entry -------------------------------------------------------------------------------------

def _eval_in(namespace, source):
    return eval(compile(source, "<suite program>", "eval"), namespace)  # noqa: S307 (the suite's own programs)


def build_program(torch, entry, device="cuda"):
    """Runs the preamble and builds (callee, inputs, make_call) on `device`: make_call(fn) gives
    call(*inputs), which runs fn (the callee or its compiled form) with the final expression's
    non-input arguments bound."""
    split = split_program(entry["program"])
    namespace = {"__name__": "suite_program"}
    exec(compile(split.preamble, f"<{entry['id']}>", "exec"), namespace)  # noqa: S102
    torch.manual_seed(0)
    with torch.device(device):
        callee = _eval_in(namespace, split.callee)
        pos = [(kind, _eval_in(namespace, src)) for kind, src in split.args]
        kw = [(name, kind, _eval_in(namespace, src)) for name, kind, src in split.keywords]
    if isinstance(callee, torch.nn.Module):
        callee = callee.to(device).eval()
    move = lambda v: v.to(device) if isinstance(v, torch.Tensor) else v  # noqa: E731
    pos = [(kind, move(v)) for kind, v in pos]
    kw = [(name, kind, move(v)) for name, kind, v in kw]
    inputs = [v for kind, v in pos if kind == "input"] + [v for _, kind, v in kw if kind == "input"]
    n_pos_inputs = sum(1 for kind, _ in pos if kind == "input")

    def make_call(fn):
        def call(*xs):
            it = iter(xs[:n_pos_inputs])
            args = [next(it) if kind == "input" else v for kind, v in pos]
            rest = iter(xs[n_pos_inputs:])
            kwargs = {name: (next(rest) if kind == "input" else v) for name, kind, v in kw}
            return fn(*args, **kwargs)
        return call

    return callee, inputs, make_call


def load_io(torch, callee, inputs, path, device="cuda"):
    """Replaces inputs and parameters with those of Tessera's --save-io file; returns (inputs,
    [(output name, Tessera's tensor)])."""
    st = SafetensorsFile(path)
    names, params, outputs = st.io_names()
    if len(names) != len(inputs):
        raise ValueError(f"{len(names)} inputs in {path}, the program creates {len(inputs)}")
    loaded = []
    for n, (name, x) in enumerate(zip(names, inputs)):
        t = load_tensor(torch, st, name)
        if tuple(t.shape) != tuple(x.shape) or t.dtype != x.dtype:
            raise ValueError(f"input {n} '{name}' is {tuple(t.shape)} {t.dtype} in the file, "
                             f"the program creates {tuple(x.shape)} {x.dtype}")
        loaded.append(t.to(device))
    module_params = dict(callee.named_parameters()) if isinstance(callee, torch.nn.Module) else {}
    missing = sorted(set(module_params) - set(params.values()))
    if missing:
        raise ValueError(f"parameters not in {path}: {', '.join(missing)}")
    with torch.no_grad():
        for name, dotted in params.items():
            if dotted not in module_params:
                raise ValueError(f"{path} has parameter '{dotted}', the program has none of that path")
            p = module_params[dotted]
            t = load_tensor(torch, st, name)
            if tuple(t.shape) != tuple(p.shape) or t.dtype != p.dtype:
                raise ValueError(f"parameter '{dotted}' is {tuple(t.shape)} {t.dtype} in the file, "
                                 f"{tuple(p.shape)} {p.dtype} in the program")
            p.copy_(t)
    return loaded, [(name, load_tensor(torch, st, name)) for name in outputs]


def entry_reduction(torch, entry, callee, inputs):
    fan_ins = []
    if isinstance(callee, torch.nn.Module):
        for m in callee.modules():
            if isinstance(m, torch.nn.Linear):
                fan_ins.append(m.in_features)
            elif hasattr(m, "normalized_shape") and m.normalized_shape:
                fan_ins.append(math.prod(m.normalized_shape))
    return reduction_length(entry["family"], entry["seq"], entry["kv"], entry["phase"], fan_ins,
                            [x.shape[-1] for x in inputs if x.dim() > 0])


def empty_result(entry, detail):
    return {"id": entry["id"], "family": entry["family"], "model": entry["model"], "phase": entry["phase"],
            "seq": entry["seq"], "kv": entry["kv"], "dtype": entry["dtype"],
            "eager_us": None, "compiled_us": None, "eager_plain_us": None, "compiled_plain_us": None,
            "compile_s": None, "check": {"status": "skipped", "max_abs": None, "max_rel": None, "detail": detail},
            "errors": []}


def run_entry(torch, entry, args, timer, device="cuda", compile_fn=None):
    """Checks (with --io-dir) and times one entry. `device`, `timer` and `compile_fn` (default
    torch.compile in --mode) are parameters so that the tests can run it on the CPU."""
    result = empty_result(entry, "no --io-dir")
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    if compile_fn is None:
        compile_fn = lambda fn: torch.compile(fn, mode=COMPILE_MODES[args.mode])  # noqa: E731
    with torch.no_grad():
        callee, inputs, make_call = build_program(torch, entry, device)
        eager = make_call(callee)
        if args.io_dir:
            path = os.path.join(args.io_dir, entry["id"] + ".safetensors")
            if not os.path.exists(path):
                result["check"]["detail"] = f"no {path}"
            else:
                try:
                    inputs, expected = load_io(torch, callee, inputs, path, device)
                    reference = flatten_outputs(eager(*inputs))
                    if len(reference) != len(expected):
                        raise ValueError(f"PyTorch gives {len(reference)} outputs, {path} holds {len(expected)}")
                    k = entry_reduction(torch, entry, callee, inputs)
                    result["check"] = verdict([compare_tensors(torch, name, ref, tessera_out, k)
                                               for (name, tessera_out), ref in zip(expected, reference)])
                    del reference, expected
                except Exception as e:  # noqa: BLE001 (recorded per entry; the run goes on)
                    result["check"] = {"status": "fail", "max_abs": None, "max_rel": None,
                                       "detail": f"{type(e).__name__}: {e}"}
        sync()

        for column, fn in (("eager_us", lambda: timer.graph(eager, inputs)),
                           ("eager_plain_us", lambda: timer.plain(eager, inputs))):
            try:
                result[column] = fn()
            except Exception as e:  # noqa: BLE001
                result["errors"].append(f"{column}: {type(e).__name__}: {e}")

        if COMPILE_MODES[args.mode] is None:  # --mode none: eager only
            return result
        try:
            torch._dynamo.reset()
            compiled = make_call(compile_fn(callee))
            sync()
            start = time.perf_counter()
            compiled(*inputs)
            sync()
            result["compile_s"] = time.perf_counter() - start
        except Exception as e:  # noqa: BLE001
            result["errors"].append(f"torch.compile: {type(e).__name__}: {e}")
            compiled = None
        if compiled is not None:
            for column, fn in (("compiled_us", lambda: timer.graph(compiled, inputs)),
                               ("compiled_plain_us", lambda: timer.plain(compiled, inputs))):
                try:
                    result[column] = fn()
                except Exception as e:  # noqa: BLE001
                    result["errors"].append(f"{column}: {type(e).__name__}: {e}")
    return result


# torch.compile modes. Inductor's own CUDA graphs are off in both: the timing captures the whole
# program in one CUDA graph itself, and a graph cannot be captured inside another.
# `none` times eager PyTorch only (the compiled columns stay null): the short GPU run's choice.
COMPILE_MODES = {"default": "default", "max-autotune": "max-autotune-no-cudagraphs", "none": None}


def json_safe(value):
    """NaN and infinities (an overflowing output's error) become null: the report is strict JSON."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_json(path, report):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(json_safe(report), f, indent=2, allow_nan=False)
        f.write("\n")
    os.replace(tmp, path)


def parse_args(argv):
    p = argparse.ArgumentParser(description="Time PyTorch eager and torch.compile on the suite's entries "
                                            "and check Tessera's outputs against PyTorch.")
    p.add_argument("--suite", required=True, help="the suite file (bench/suite.yaml)")
    p.add_argument("--tier", choices=TIERS, help="only entries of this tier (default: every entry)")
    p.add_argument("--entries", help="comma-separated entry ids")
    p.add_argument("--io-dir", help="directory of <id>.safetensors files from `tessera run --save-io`")
    p.add_argument("--mode", choices=sorted(COMPILE_MODES), default="default", help="torch.compile mode")
    p.add_argument("--iterations", type=int, default=100, help="timed runs per column (default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed runs before them (default 10)")
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--resume", action="store_true",
                   help="keep the entries FILE.json already holds (same device and settings) and run only the rest")
    p.add_argument("--max-seconds", type=float,
                   help="start no entry after this many seconds (rerun with --resume to go on)")
    args = p.parse_args(argv)
    if args.iterations < 1 or args.warmup < 0:
        p.error("--iterations must be >= 1 and --warmup >= 0")
    return args


# The report fields that must match for --resume to add to an existing report.
RESUME_KEYS = ("device", "torch_version", "cuda_version", "mode", "iterations", "warmup", "l2_bytes")


def resumed_entries(path, report):
    """The entries of an earlier report at `path` made with the same settings as `report`, by id;
    entries that recorded errors are left out, so that they run again. Raises ValueError when the
    settings differ or the file is not such a report."""
    with open(path, encoding="utf-8") as f:
        old = json.load(f)
    if not isinstance(old, dict) or not isinstance(old.get("entries"), list):
        raise ValueError(f"{path} is not a pytorch_baseline report")
    differ = [k for k in RESUME_KEYS if old.get(k) != report.get(k)]
    if differ:
        raise ValueError(f"{path} was made with other settings ({', '.join(f'{k}: {old.get(k)!r}' for k in differ)}); "
                         f"--resume needs the same")
    return {e["id"]: e for e in old["entries"] if isinstance(e, dict) and "id" in e and not e.get("errors")}


def in_suite_order(results, suite_order):
    """Results {id: result} as a list: suite order first, then ids the suite no longer has."""
    known = set(suite_order)
    return [results[i] for i in suite_order if i in results] + [r for i, r in results.items() if i not in known]


def main(argv):
    args = parse_args(argv)
    try:
        suite_entries = load_suite(args.suite)
        entries = select_entries(suite_entries, args.tier,
                                 [i for i in args.entries.split(",") if i] if args.entries else None)
    except OSError as e:
        print(f"pytorch_baseline: cannot read the suite: {e}", file=sys.stderr)
        return 1
    except SuiteError as e:
        print(f"pytorch_baseline: {e}", file=sys.stderr)
        return 1
    if not entries:
        print("pytorch_baseline: no entries selected", file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError as e:
        print(f"pytorch_baseline: PyTorch is not installed ({e}); nothing measured", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("pytorch_baseline: no CUDA driver/GPU: torch.cuda.is_available() is False; nothing measured",
              file=sys.stderr)
        return 2

    # f32 matmuls in full precision (no TF32), as Tessera computes them; recorded in the report.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    props = torch.cuda.get_device_properties(0)
    l2_bytes = int(getattr(props, "L2_cache_size", 0) or 0)
    l2_known = l2_bytes > 0
    if not l2_known:
        l2_bytes = 256 << 20   # larger than any current GPU's L2, so the flush still evicts it
    report = {
        "device": props.name, "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
        "l2_bytes": l2_bytes if l2_known else None, "flush_bytes": 2 * l2_bytes,
        "mode": args.mode, "torch_compile_mode": COMPILE_MODES[args.mode], "iterations": args.iterations,
        "warmup": args.warmup, "float32_matmul_precision": "highest", "suite": args.suite,
        "tier": args.tier or "full", "entries": [],
    }
    done = {}
    if args.resume and os.path.exists(args.out):
        try:
            done = resumed_entries(args.out, report)
        except (OSError, ValueError) as e:
            print(f"pytorch_baseline: cannot resume: {e}", file=sys.stderr)
            return 2
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
    # The report lists every result in suite order: kept ones (also those of entries not selected
    # this time, so that runs over parts of the suite add up) and new ones.
    results = dict(done)
    suite_order = [e["id"] for e in suite_entries]
    report["entries"] = in_suite_order(results, suite_order)
    write_json(args.out, report)   # fails now, not after the first entry, if --out is not writable
    timer = Timer(torch, l2_bytes, args.iterations, args.warmup)
    run_start = time.perf_counter()
    todo = [e for e in entries if e["id"] not in done]
    if done:
        print(f"pytorch_baseline: {len(done)} entries kept from {args.out}, {len(todo)} to run", flush=True)
    for n, entry in enumerate(todo, 1):
        if args.max_seconds is not None and time.perf_counter() - run_start > args.max_seconds:
            print(f"pytorch_baseline: --max-seconds {args.max_seconds:g} reached; {len(todo) - n + 1} entries "
                  f"not run (rerun with --resume to go on)", flush=True)
            break
        start = time.perf_counter()
        try:
            result = run_entry(torch, entry, args, timer)
        except Exception as e:  # noqa: BLE001 (e.g. out of memory: recorded, the next entry runs)
            result = empty_result(entry, "the entry did not run")
            result["errors"].append(f"{type(e).__name__}: {e}")
        results[entry["id"]] = result
        report["entries"] = in_suite_order(results, suite_order)
        write_json(args.out, report)   # after every entry, so a cut-short run keeps what it measured
        torch._dynamo.reset()
        torch.cuda.empty_cache()
        fmt = lambda v: "-" if v is None else f"{v:.1f}"  # noqa: E731
        print(f"[{n}/{len(todo)}] {entry['id']}: eager {fmt(result['eager_us'])} us, compiled "
              f"{fmt(result['compiled_us'])} us, check {result['check']['status']}"
              f"{'; errors: ' + ' | '.join(result['errors']) if result['errors'] else ''} "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
    failed = sum(1 for r in report["entries"] if r.get("check", {}).get("status") == "fail")
    errored = sum(1 for r in report["entries"] if r.get("errors"))
    print(f"pytorch_baseline: {len(report['entries'])} entries in the report, "
          f"{failed} checks failed, {errored} with errors; "
          f"wrote {args.out}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
