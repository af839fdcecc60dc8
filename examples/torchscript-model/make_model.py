"""Defines two models, scripts them and saves them for induct: lstm.pt and transformer.pt.

Run from this folder with Debian's python3-torch (or any PyTorch whose TorchScript format the
LibTorch of your induct build reads; docs/plugin-guide.md):  /usr/bin/python3 make_model.py

What induct needs of a scripted module:
  forward(tokens)       tokens [B, T] int64 -> logits [B, T, V], causal (position t sees 0..t)
  reset_parameters(vocab_size, max_length, seed)
                        exported; sizes the tensors that depend on the vocabulary or the length
                        (param.set_(new values)) and draws every parameter. induct seeds torch's
                        generator with `seed` and calls it without autograd, once per model it
                        builds.
  torch.ops.induct.hook(name, x)
                        optional, at each layer output: what probe studies read and change.
"""
import argparse
import math

import torch
import torch.nn as nn

import induct_ops  # noqa: F401  (defines torch.ops.induct.hook for scripting)


def uniform(shape: list[int], bound: float) -> torch.Tensor:
    return torch.empty(shape).uniform_(-bound, bound)


def draw_linear(weight: torch.Tensor, bias: torch.Tensor):
    """nn.Linear's initialisation, in place: U(+-1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(weight.shape[1])
    weight.uniform_(-bound, bound)
    bias.uniform_(-bound, bound)


class Lstm(nn.Module):
    """One LSTM layer, embedding = hidden, a linear head (the in-tree `lstm`'s names)."""

    def __init__(self, hidden: int = 64):
        super().__init__()
        self.hidden = hidden
        # Sized 1 here: reset_parameters gives the vocabulary its real size.
        self.embed = nn.Embedding(1, hidden)
        self.lstm = nn.LSTM(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = torch.ops.induct.hook("embed", self.embed(tokens))
        h, _ = self.lstm(x)
        h = torch.ops.induct.hook("lstm.0", h)
        return self.head(h)

    @torch.jit.export
    def reset_parameters(self, vocab_size: int, max_length: int, seed: int):
        # PyTorch's own initialisations: N(0, 1) embeddings, U(+-1/sqrt(fan_in)) elsewhere.
        # set_ gives a parameter new values of a new size and keeps it the same parameter (in
        # Python as in TorchScript, where assigning a plain tensor to it would not work).
        bound = 1.0 / math.sqrt(self.hidden)
        self.embed.weight.set_(torch.randn(vocab_size, self.hidden))
        for w in self.lstm._flat_weights:  # drawn in place: the LSTM holds these tensors
            w.uniform_(-bound, bound)
        self.head.weight.set_(uniform([vocab_size, self.hidden], bound))
        self.head.bias.set_(uniform([vocab_size], bound))


class Block(nn.Module):
    """A pre-norm transformer block with causal multi-head attention and a GELU MLP."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)
        self.norm2 = nn.LayerNorm(d_model)
        self.up = nn.Linear(d_model, 4 * d_model)
        self.down = nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, d // self.heads).unbind(2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B, H, T, D/H]
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)
        future = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        attention = scores.masked_fill(future, float("-inf")).softmax(-1)
        x = x + self.out((attention @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm2(x))))

    def reset_parameters(self):
        draw_linear(self.qkv.weight, self.qkv.bias)
        draw_linear(self.out.weight, self.out.bias)
        draw_linear(self.up.weight, self.up.bias)
        draw_linear(self.down.weight, self.down.bias)
        self.norm1.weight.fill_(1.0)
        self.norm1.bias.zero_()
        self.norm2.weight.fill_(1.0)
        self.norm2.bias.zero_()


class Transformer(nn.Module):
    """A small GPT: token and learned position embeddings, pre-norm blocks, a final norm."""

    def __init__(self, layers: int = 2, d_model: int = 64, heads: int = 4):
        super().__init__()
        self.d_model = d_model
        self.tok = nn.Embedding(1, d_model)
        self.pos = nn.Embedding(1, d_model)
        self.blocks = nn.ModuleList([Block(d_model, heads) for _ in range(layers)])
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, 1)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = torch.ops.induct.hook("embed", self.tok(tokens) + self.pos(positions))
        i = 0
        for block in self.blocks:
            x = torch.ops.induct.hook("block." + str(i), block(x))
            i += 1
        return self.head(torch.ops.induct.hook("norm", self.norm(x)))

    @torch.jit.export
    def reset_parameters(self, vocab_size: int, max_length: int, seed: int):
        d = self.d_model
        self.tok.weight.set_(torch.randn(vocab_size, d) * 0.02)
        self.pos.weight.set_(torch.randn(max_length, d) * 0.02)
        for block in self.blocks:
            block.reset_parameters()
        self.norm.weight.fill_(1.0)
        self.norm.bias.zero_()
        self.head.weight.set_(uniform([vocab_size, d], 1.0 / math.sqrt(d)))
        self.head.bias.set_(uniform([vocab_size], 1.0 / math.sqrt(d)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=".", help="folder to write lstm.pt and transformer.pt into")
    parser.add_argument("--hidden", type=int, default=64, help="the LSTM's width")
    parser.add_argument("--layers", type=int, default=2, help="the transformer's blocks")
    parser.add_argument("--d-model", type=int, default=64, help="the transformer's width")
    parser.add_argument("--heads", type=int, default=4, help="the transformer's heads")
    args = parser.parse_args()
    models = {"lstm": Lstm(args.hidden),
              "transformer": Transformer(args.layers, args.d_model, args.heads)}
    for name, model in models.items():
        path = f"{args.out}/{name}.pt"
        torch.jit.script(model).save(path)
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
