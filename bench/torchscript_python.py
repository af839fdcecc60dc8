"""Training steps per second of examples/torchscript-model/make_model.py's models in eager
PyTorch (Adam, cross-entropy over every position, batch 64, vocabulary 12, one thread): the
Python side of bench/torchscript_bench.sh. Prints "steps_per_s <value>".

  /usr/bin/python3 bench/torchscript_python.py --model lstm --hidden 64 --length 10 --seconds 3
"""
import argparse
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../examples/torchscript-model"))
import induct_ops  # noqa: E402,F401
from make_model import Lstm, Transformer  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["lstm", "transformer"], required=True)
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--length", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(1)
    vocab, batch = 12, 64
    model = Lstm(args.hidden) if args.model == "lstm" else Transformer()
    with torch.no_grad():
        model.reset_parameters(vocab, args.length, 1)
    optimizer = torch.optim.Adam(model.parameters(), 1e-4)
    tokens = torch.randint(0, vocab - 2, (batch, args.length))
    targets = torch.randint(0, vocab, (batch * args.length,))

    def step():
        loss = torch.nn.functional.cross_entropy(model(tokens).reshape(-1, vocab), targets)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(2):
        step()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < args.seconds or steps < 3:
        step()
        steps += 1
    print(f"steps_per_s {steps / (time.perf_counter() - start)}")


if __name__ == "__main__":
    main()
