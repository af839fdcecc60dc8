"""Training-step throughput of the PyTorch reference models (the Python side of
bench/run_bench.sh). Same measurement as induct_bench: random tokens [batch, T], cross-entropy
on every position, backward, Adam; steps per second over a time budget.

usage: /usr/bin/python3 bench_models.py --model gpt2 --length 30 [--batch 64] [--seconds 3]
                                        [--small] [--threads 1]
"""
import argparse
import os
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import models  # noqa: E402

VOCAB = 12  # Z_5: 5 actions + 5 states + PAD + SEP, as induct_bench

PAPER = {
    "lstm": ("lstm", dict(hidden=256)),
    "lstm768": ("lstm", dict(hidden=768)),
    "gpt2": ("gpt2", {}),
    "llama": ("llama", {}),
    "pythia": ("pythia", {}),
    "dense_ssm": ("dense_ssm", dict(precompute=True)),
    "mamba": ("mamba", {}),
    "gru": ("gru", dict(hidden=256)),
    "mamba2": ("mamba2", dict(chunked=True)),
    "deltanet": ("deltanet", {}),
    "xlstm": ("xlstm", dict(d_ff=384)),
}
SMALL = {
    "lstm": ("lstm", dict(hidden=64)),
    "gpt2": ("gpt2", dict(layers=2, d_model=64, heads=4, d_ff=256)),
    "llama": ("llama", dict(layers=2, d_model=64, heads=4, d_ff=256)),
    "pythia": ("pythia", dict(layers=2, d_model=64, heads=4, d_ff=256)),
    "dense_ssm": ("dense_ssm", dict(hidden=64, precompute=True)),
    "mamba": ("mamba", dict(layers=2, d_model=64)),
    "gru": ("gru", dict(hidden=64)),
    "mamba2": ("mamba2", dict(layers=2, d_model=64, chunked=True)),
    "deltanet": ("deltanet", dict(layers=2, d_model=64, heads=4, d_ff=256)),
    "xlstm": ("xlstm", dict(blocks="ms", d_model=64, d_ff=128)),
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--length", type=int, required=True)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--small", action="store_true")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    name, options = (SMALL if args.small else PAPER)[args.model]
    model = models.build(name, VOCAB, args.length, options)
    model.train()
    params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, VOCAB - 2, (args.batch, args.length))
    targets = torch.randint(0, VOCAB, (args.batch * args.length,))

    def step():
        logits = model(tokens)
        loss = F.cross_entropy(logits.reshape(-1, VOCAB), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    for _ in range(2):
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds or steps < 3:
        step()
        steps += 1
    rate = steps / (time.perf_counter() - start)
    print(f"model {args.model} params {params} length {args.length} steps_per_s {rate}")


if __name__ == "__main__":
    main()
