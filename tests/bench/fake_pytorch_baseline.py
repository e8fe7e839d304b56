#!/usr/bin/env python3
"""A stand-in for bench/pytorch_baseline.py in the tests of `tessera bench` (no torch needed): takes
the same arguments, checks that every selected entry's --save-io file is there and names its
tensors in its metadata, and writes a baseline JSON with made-up times (eager 2 us, compiled 1 us)
and check status pass. Its argument list goes to <out>.args so the test can see how it was called.

FAKE_BASELINE_EXIT=N makes it print a reason and exit with N instead (2: nothing measured).
"""
import argparse
import json
import os
import struct
import sys


def main(argv):
    p = argparse.ArgumentParser()
    for flag in ("--suite", "--tier", "--entries", "--io-dir", "--mode", "--iterations", "--out"):
        p.add_argument(flag)
    args = p.parse_args(argv)
    with open(args.out + ".args", "w") as f:
        json.dump(argv, f)
    code = int(os.environ.get("FAKE_BASELINE_EXIT", "0"))
    if code:
        print("fake_pytorch_baseline: PyTorch is not installed; nothing measured", file=sys.stderr)
        return code
    entries = []
    for entry_id in args.entries.split(","):
        with open(os.path.join(args.io_dir, entry_id + ".safetensors"), "rb") as f:
            data = f.read()
        (n,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + n])
        meta = header["__metadata__"]
        names = json.loads(meta["tessera.inputs"]) + list(json.loads(meta["tessera.params"])) + \
            json.loads(meta["tessera.outputs"])
        missing = [name for name in names if name not in header]
        entries.append({"id": entry_id, "eager_us": 2.0, "compiled_us": 1.0, "eager_plain_us": 1.5,
                        "compiled_plain_us": 0.8, "compile_s": 4.0,
                        "check": {"status": "fail" if missing else "pass", "max_abs": 0.0, "max_rel": 0.0,
                                  "detail": "missing tensors: %s" % missing if missing else ""},
                        "errors": []})
    with open(args.out, "w") as f:
        json.dump({"device": "fake", "torch_version": "0.0-fake", "cuda_version": "none", "l2_bytes": None,
                   "mode": args.mode, "entries": entries}, f)
    print("fake_pytorch_baseline: %d entries" % len(entries))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
