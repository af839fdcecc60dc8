"""Checks logits computed by induct's C++ models against the plain PyTorch references.

usage: /usr/bin/python3 check_logits.py DIR [DIR ...]

Each DIR holds what the C++ test wrote for one model: config.txt (model name, vocabulary,
maximum length, options as key=value), params.txt (name, file, shape per line), the raw
float32 parameter files, tokens.bin (int64) and logits.bin (float32). Prints the largest
relative error per model and exits 1 if any exceeds the tolerance (1e-5).
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

TOLERANCE = 1e-5


def parse_value(text):
    if text.startswith("{") and text.endswith("}"):  # a section in YAML's flow style, one level
        entries = [e.split(":", 1) for e in text[1:-1].split(",") if e.strip()]
        return {k.strip(): parse_value(v.strip()) for k, v in entries}
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text, text)


def check(directory):
    config = dict(line.rstrip("\n").split("=", 1) for line in open(os.path.join(directory, "config.txt")))
    name, vocab = config.pop("model"), int(config.pop("vocab"))
    max_length, batch = int(config.pop("max_length")), int(config.pop("batch"))
    options = {k: parse_value(v) for k, v in config.items()}
    model = models.build(name, vocab, max_length, options)
    state = {}
    for line in open(os.path.join(directory, "params.txt")):
        pname, fname, *shape = line.split()
        data = np.fromfile(os.path.join(directory, fname), dtype=np.float32)
        state[pname] = torch.from_numpy(data).reshape([int(s) for s in shape])
    model.load_state_dict(state, strict=True)
    model.eval()
    tokens = torch.from_numpy(np.fromfile(os.path.join(directory, "tokens.bin"), dtype=np.int64))
    tokens = tokens.reshape(batch, -1)
    expected = torch.from_numpy(np.fromfile(os.path.join(directory, "logits.bin"), dtype=np.float32))
    with torch.no_grad():
        logits = model(tokens).reshape(-1)
    error = ((logits - expected).abs().max() / expected.abs().max().clamp_min(1e-12)).item()
    ok = error <= TOLERANCE
    print(f"{name}: max relative error {error:.3g} ({'ok' if ok else 'FAIL'}, tolerance {TOLERANCE:g})")
    return ok


if __name__ == "__main__":
    torch.set_num_threads(1)
    results = [check(d) for d in sys.argv[1:]]
    sys.exit(0 if results and all(results) else 1)
