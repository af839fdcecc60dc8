"""Plain PyTorch reference implementations of induct's in-tree models.

Written from the papers and docs/method.md section 8, independently of the C++ plugins, with the same
parameter names so that weights saved by C++ load here with strict=True. Used to check the
C++ logits (check_logits.py) and as the Python side of the benchmarks. Run with Debian's
/usr/bin/python3 (python3-torch 1.13).
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class LSTM(nn.Module):
    def __init__(self, vocab, hidden=256, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.lstm = nn.LSTM(hidden, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):  # (b, t) -> (b, t, v)
        h, _ = self.lstm(self.embed(tokens))
        return self.head(h)


class GRU(nn.Module):
    def __init__(self, vocab, hidden=256, layers=1):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.gru = nn.GRU(hidden, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):  # (b, t) -> (b, t, v)
        h, _ = self.gru(self.embed(tokens))
        return self.head(h)


class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate(x, rotary_dim, theta):
    """Rotary embedding, rotate-half convention, on the first rotary_dim features of each head.
    x: (b, h, t, dh)"""
    t = x.shape[-2]
    inv_freq = theta ** (-torch.arange(0, rotary_dim, 2, dtype=torch.float64) / rotary_dim)
    angles = torch.outer(torch.arange(t, dtype=torch.float64), inv_freq)
    angles = torch.cat([angles, angles], -1)
    cos, sin = angles.cos().float(), angles.sin().float()
    rot, rest = x[..., :rotary_dim], x[..., rotary_dim:]
    x1, x2 = rot.chunk(2, -1)
    rot = rot * cos + torch.cat([-x2, x1], -1) * sin
    return torch.cat([rot, rest], -1)


class Attention(nn.Module):
    def __init__(self, d, heads, bias, dropout, rotary_dim, theta):
        super().__init__()
        self.heads, self.dropout, self.rotary_dim, self.theta = heads, dropout, rotary_dim, theta
        self.qkv = nn.Linear(d, 3 * d, bias=bias)
        self.out = nn.Linear(d, d, bias=bias)

    def forward(self, x):  # (b, t, d)
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.rotary_dim:
            q, k = rotate(q, self.rotary_dim, self.theta), rotate(k, self.rotary_dim, self.theta)
        scores = q @ k.transpose(-2, -1) / math.sqrt(d // self.heads)  # (b, h, t, t)
        causal = torch.ones(t, t, dtype=torch.bool).triu(1)
        weights = F.dropout(scores.masked_fill(causal, float("-inf")).softmax(-1),
                            self.dropout, self.training)
        y = (weights @ v).transpose(1, 2).reshape(b, t, d)
        return F.dropout(self.out(y), self.dropout, self.training)


class Mlp(nn.Module):
    def __init__(self, d, hidden, approximate, bias, dropout):
        super().__init__()
        self.fc, self.proj = nn.Linear(d, hidden, bias=bias), nn.Linear(hidden, d, bias=bias)
        self.approximate, self.dropout = approximate, dropout

    def forward(self, x):
        y = self.proj(F.gelu(self.fc(x), approximate=self.approximate))
        return F.dropout(y, self.dropout, self.training)


class SwiGlu(nn.Module):
    def __init__(self, d, hidden):
        super().__init__()
        self.gate = nn.Linear(d, hidden, bias=False)
        self.up = nn.Linear(d, hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x):
        return self.down(F.silu(self.gate(x)) * self.up(x))


STYLES = {
    # learned positions, rms, parallel, swiglu, bias, tied, gelu approximation, rotary fraction
    "gpt2": dict(positions=True, rms=False, parallel=False, swiglu=False, bias=True, tied=True,
                 gelu="tanh", rotary=0.0),
    "llama": dict(positions=False, rms=True, parallel=False, swiglu=True, bias=False, tied=False,
                  gelu=None, rotary=1.0),
    "pythia": dict(positions=False, rms=False, parallel=True, swiglu=False, bias=True, tied=False,
                   gelu="none", rotary=0.25),
}


class Block(nn.Module):
    def __init__(self, s, d, heads, d_ff, dropout, theta, eps):
        super().__init__()
        norm = (lambda: RMSNorm(d, eps)) if s["rms"] else (lambda: nn.LayerNorm(d, eps=eps))
        self.parallel = s["parallel"]
        self.norm1 = norm()
        self.attn = Attention(d, heads, s["bias"], dropout, int(d // heads * s["rotary"]), theta)
        self.norm2 = norm()
        self.mlp = SwiGlu(d, d_ff) if s["swiglu"] else Mlp(d, d_ff, s["gelu"], s["bias"], dropout)

    def forward(self, x):
        if self.parallel:
            return x + self.attn(self.norm1(x)) + self.mlp(self.norm2(x))
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class Transformer(nn.Module):
    def __init__(self, style, vocab, max_length, layers=6, d_model=256, heads=4, d_ff=1024,
                 dropout=None, positions=None, rope_theta=None, rotary_pct=None, norm_eps=1e-5):
        super().__init__()
        s = dict(STYLES[style])
        if rotary_pct is not None:
            s["rotary"] = rotary_pct
        if dropout is None:
            dropout = 0.1 if style == "gpt2" else 0.0
        if rope_theta is None:
            rope_theta = 500000.0 if style == "llama" else 10000.0
        self.s, self.dropout = s, dropout
        self.tok = nn.Embedding(vocab, d_model)
        if s["positions"]:
            self.pos = nn.Embedding(positions or max_length, d_model)
        self.blocks = nn.ModuleList(
            Block(s, d_model, heads, d_ff, dropout, rope_theta, norm_eps) for _ in range(layers))
        self.norm = RMSNorm(d_model, norm_eps) if s["rms"] else nn.LayerNorm(d_model, eps=norm_eps)
        if not s["tied"]:
            self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):  # (b, t) -> (b, t, v)
        x = self.tok(tokens)
        if self.s["positions"]:
            x = x + self.pos(torch.arange(tokens.shape[1]))
        x = F.dropout(x, self.dropout, self.training)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return x @ self.tok.weight.t() if self.s["tied"] else self.head(x)


class DenseSSM(nn.Module):
    """h_t = A(x_t) h_{t-1}, A(x)_ij = sum_k W_ijk x_k, optionally A(x) = U diag(V^T x) W^T,
    or block-diagonal with blocks of size `block` (1: diagonal)."""

    def __init__(self, vocab, hidden=256, embed=None, rank=0, normalize=True, precompute=False,
                 block=0):
        super().__init__()
        embed = embed or hidden
        self.rank, self.normalize, self.precompute, self.block = rank, normalize, precompute, block
        self.embed = nn.Embedding(vocab, embed)
        if block:
            self.W = nn.Parameter(torch.zeros(hidden // block, block, block, embed))
        elif rank == 0:
            self.W = nn.Parameter(torch.zeros(hidden, hidden, embed))
        else:
            self.U = nn.Parameter(torch.zeros(hidden, rank))
            self.V = nn.Parameter(torch.zeros(embed, rank))
            self.W = nn.Parameter(torch.zeros(hidden, rank))
        self.h0 = nn.Parameter(torch.zeros(hidden))
        self.head = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        x = self.embed(tokens)  # (b, t, e)
        h = self.h0.expand(tokens.shape[0], -1)
        if self.precompute and self.rank == 0:  # one matrix per token, gathered (benchmarks)
            per_token = torch.einsum("ijk,vk->vij", self.W, self.embed.weight)  # (v, h, h)
        states = []
        for t in range(tokens.shape[1]):
            if self.block:  # each block's map contracted per step
                A = torch.einsum("jpqk,bk->bjpq", self.W, x[:, t])
                hb = h.reshape(h.shape[0], -1, self.block)
                h = torch.einsum("bjpq,bjq->bjp", A, hb).reshape(h.shape[0], -1)
            elif self.rank == 0 and self.precompute:
                h = torch.bmm(per_token[tokens[:, t]], h.unsqueeze(-1)).squeeze(-1)
            elif self.rank == 0:
                A = torch.einsum("ijk,bk->bij", self.W, x[:, t])  # contracted per step
                h = torch.einsum("bij,bj->bi", A, h)
            else:
                h = ((h @ self.W) * (x[:, t] @ self.V)) @ self.U.t()
            if self.normalize:
                h = h / h.norm(dim=-1, keepdim=True).clamp_min(1e-12)
            states.append(h)
        return self.head(torch.stack(states, 1))


class MambaBlock(nn.Module):
    def __init__(self, d, expand, d_state, d_conv, dt_rank):
        super().__init__()
        di = expand * d
        self.d_state, self.dt_rank = d_state, dt_rank
        self.norm = RMSNorm(d)
        self.in_proj = nn.Linear(d, 2 * di, bias=False)
        self.conv = nn.Conv1d(di, di, d_conv, groups=di, padding=d_conv - 1)
        self.x_proj = nn.Linear(di, dt_rank + 2 * d_state, bias=False)
        self.dt_proj = nn.Linear(dt_rank, di)
        self.out_proj = nn.Linear(di, d, bias=False)
        self.A_log = nn.Parameter(torch.zeros(di, d_state))
        self.D = nn.Parameter(torch.ones(di))

    def forward(self, x):  # (b, l, d)
        l = x.shape[1]
        u, z = self.in_proj(self.norm(x)).chunk(2, -1)  # (b, l, d_in)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :l].transpose(1, 2))
        dt, B, C = self.x_proj(u).split([self.dt_rank, self.d_state, self.d_state], -1)
        delta = F.softplus(self.dt_proj(dt))  # (b, l, d_in)
        A = -torch.exp(self.A_log)  # (d_in, n)
        h = torch.zeros(x.shape[0], u.shape[2], self.d_state)
        ys = []
        for t in range(l):  # sequential selective scan (mamba-minimal)
            h = torch.exp(delta[:, t, :, None] * A) * h + \
                delta[:, t, :, None] * B[:, t, None, :] * u[:, t, :, None]
            ys.append((h * C[:, t, None, :]).sum(-1))
        y = torch.stack(ys, 1) + u * self.D
        return x + self.out_proj(y * F.silu(z))


class Mamba(nn.Module):
    def __init__(self, vocab, layers=6, d_model=256, expand=2, d_state=64, d_conv=4, dt_rank=16,
                 tie_embeddings=True, dt_min=None, dt_max=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            MambaBlock(d_model, expand, d_state, d_conv, dt_rank) for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.tied = tie_embeddings
        if not tie_embeddings:
            self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return x @ self.embed.weight.t() if self.tied else self.head(x)


def ssd_chunked(x, a, B, C, chunk):
    """The SSD paper's minimal chunked listing (ssd_minimal_discrete), for the benchmarks:
    x (b, l, h, p), a (b, l, h), B and C (b, l, h, n) -> y (b, l, h, p)."""
    b, l, h, p = x.shape
    q = min(chunk, l)
    pad = -l % q
    x, a, B, C = (F.pad(t, (0, 0) * (t.dim() - 2) + (0, pad)) for t in (x, a, B, C))
    c = x.shape[1] // q
    x, B, C = (t.reshape(b, c, q, h, -1) for t in (x, B, C))
    a = a.reshape(b, c, q, h).permute(0, 3, 1, 2)  # (b, h, c, q)
    a_cum = a.cumsum(-1)

    def segsum(t):
        n = t.shape[-1]
        t = t[..., None].expand(*t.shape, n).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(-1), 0)
        return t.cumsum(-2).masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(0), float("-inf"))

    scores = torch.einsum("bclhn,bcshn->bhcls", C, B) * torch.exp(segsum(a))
    y = torch.einsum("bhcls,bcshp->bclhp", scores, x)
    if c == 1:
        return y.reshape(b, q, h, p)[:, :l]
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, torch.exp(a_cum[..., -1:] - a_cum), x)
    states = torch.cat([torch.zeros_like(states[:, :1]), states], 1)
    across = torch.exp(segsum(F.pad(a_cum[..., -1], (1, 0))))
    states = torch.einsum("bhzc,bchpn->bzhpn", across, states)[:, :-1]
    y = y + torch.einsum("bclhn,bchpn,bhcl->bclhp", C, states, torch.exp(a_cum))
    return y.reshape(b, c * q, h, p)[:, :l]


class Mamba2Block(nn.Module):
    """Mamba-2's mixer (Dao and Gu 2024) with the SSD recurrence written step by step, or
    (chunk > 0, for the benchmarks) the SSD paper's chunked listing."""

    def __init__(self, d, expand, headdim, d_state, ngroups, d_conv, chunk=0):
        super().__init__()
        self.chunk = chunk
        di = expand * d
        self.di, self.heads, self.p = di, di // headdim, headdim
        self.g, self.n = ngroups, d_state
        conv_dim = di + 2 * ngroups * d_state
        self.norm = RMSNorm(d)
        self.in_proj = nn.Linear(d, di + conv_dim + self.heads, bias=False)
        self.conv = nn.Conv1d(conv_dim, conv_dim, d_conv, groups=conv_dim, padding=d_conv - 1)
        self.dt_bias = nn.Parameter(torch.zeros(self.heads))
        self.A_log = nn.Parameter(torch.zeros(self.heads))
        self.D = nn.Parameter(torch.ones(self.heads))
        self.gate_norm = RMSNorm(di)
        self.out_proj = nn.Linear(di, d, bias=False)

    def forward(self, u):  # (b, l, d)
        b, l, _ = u.shape
        h, p, g, n = self.heads, self.p, self.g, self.n
        z, xbc, dt = self.in_proj(self.norm(u)).split([self.di, self.di + 2 * g * n, h], -1)
        xbc = F.silu(self.conv(xbc.transpose(1, 2))[..., :l].transpose(1, 2))
        x, B, C = xbc.split([self.di, g * n, g * n], -1)
        x = x.reshape(b, l, h, p)
        B = B.reshape(b, l, g, n).repeat_interleave(h // g, 2)  # (b, l, h, n)
        C = C.reshape(b, l, g, n).repeat_interleave(h // g, 2)
        dt = F.softplus(dt + self.dt_bias)  # (b, l, h)
        A = -torch.exp(self.A_log)
        if self.chunk:
            y = ssd_chunked(x * dt[..., None], dt * A, B, C, self.chunk)
        else:
            state = torch.zeros(b, h, p, n)
            ys = []
            for t in range(l):
                state = torch.exp(dt[:, t] * A)[:, :, None, None] * state + \
                    (dt[:, t, :, None] * x[:, t])[..., None] * B[:, t, :, None, :]
                ys.append((state * C[:, t, :, None, :]).sum(-1))
            y = torch.stack(ys, 1)
        y = y + x * self.D[:, None]
        return u + self.out_proj(self.gate_norm(y.reshape(b, l, self.di) * F.silu(z)))


class Mamba2(nn.Module):
    def __init__(self, vocab, layers=6, d_model=256, expand=2, headdim=64, d_state=128, ngroups=1,
                 d_conv=4, tie_embeddings=True, chunk_size=256, chunked=False, dt_min=None,
                 dt_max=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            Mamba2Block(d_model, expand, headdim, d_state, ngroups, d_conv, chunk_size if chunked else 0)
            for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.tied = tie_embeddings
        if not tie_embeddings:
            self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        x = self.norm(x)
        return x @ self.embed.weight.t() if self.tied else self.head(x)


class DeltaBlock(nn.Module):
    """A delta-rule mixer and a SwiGLU MLP, each pre-RMSNorm residual; the recurrence step by
    step as flash-linear-attention's naive delta rule: S <- S + k (beta (v - S^T k))^T after an
    optional decay S <- exp(g) S, o = S^T q."""

    def __init__(self, d, heads, d_ff, d_conv, householder, negative_eigenvalues, gate):
        super().__init__()
        self.h, self.dh, self.n = heads, d // heads, householder
        self.neg, self.gated = negative_eigenvalues, gate
        c = d * (1 + 2 * householder)
        self.norm = RMSNorm(d)
        self.qkv = nn.Linear(d, c, bias=False)
        self.conv = nn.Conv1d(c, c, d_conv, groups=c, padding=d_conv - 1, bias=False)
        self.beta = nn.Linear(d, heads * householder, bias=False)
        if gate:
            self.decay = nn.Linear(d, heads, bias=False)
            self.A_log = nn.Parameter(torch.zeros(heads))
            self.dt_bias = nn.Parameter(torch.zeros(heads))
            self.out_gate = nn.Linear(d, d, bias=False)
        self.out_norm = RMSNorm(self.dh)
        self.out = nn.Linear(d, d, bias=False)
        self.mlp_norm = RMSNorm(d)
        self.mlp = SwiGlu(d, d_ff)

    def forward(self, u):  # (b, l, d)
        b, l, d = u.shape
        h, dh, n = self.h, self.dh, self.n
        x = self.norm(u)
        qkv = F.silu(self.conv(self.qkv(x).transpose(1, 2))[..., :l].transpose(1, 2))
        q, k, v = qkv.split([d, n * d, n * d], -1)
        q = q.reshape(b, l, h, dh)
        q = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6) / math.sqrt(dh)
        k = k.reshape(b, l, n, h, dh)
        k = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
        v = v.reshape(b, l, n, h, dh)
        beta = torch.sigmoid(self.beta(x)).reshape(b, l, n, h)
        if self.neg:
            beta = 2 * beta
        if self.gated:
            g = -torch.exp(self.A_log) * F.softplus(self.decay(x) + self.dt_bias)  # (b, l, h)
        S = torch.zeros(b, h, dh, dh)
        outs = []
        for t in range(l):
            if self.gated:
                S = S * torch.exp(g[:, t])[:, :, None, None]
            for j in range(n):
                kt, vt, bt = k[:, t, j], v[:, t, j], beta[:, t, j]  # (b, h, dh), (b, h)
                read = torch.einsum("bhk,bhkv->bhv", kt, S)
                S = S + kt[..., :, None] * (bt[..., None] * (vt - read))[..., None, :]
            outs.append(torch.einsum("bhk,bhkv->bhv", q[:, t], S))
        o = self.out_norm(torch.stack(outs, 1)).reshape(b, l, d)
        if self.gated:
            o = o * F.silu(self.out_gate(x))
        u = u + self.out(o)
        return u + self.mlp(self.mlp_norm(u))


class DeltaNet(nn.Module):
    def __init__(self, vocab, layers=6, d_model=256, heads=4, d_ff=1024, d_conv=4, householder=1,
                 negative_eigenvalues=False, gate=False):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            DeltaBlock(d_model, heads, d_ff, d_conv, householder, negative_eigenvalues, gate)
            for _ in range(layers))
        self.norm = RMSNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def x_layer_norm(x, weight):
    return F.layer_norm(x, (x.shape[-1],), weight, None, 1e-5)


def x_head_norm(x, heads, weight):  # (b, l, h*d): a LayerNorm per head
    b, l, c = x.shape
    return F.group_norm(x.reshape(b * l, c), heads, weight, None, 1e-5).reshape(b, l, c)


def x_headwise(x, weight):  # block-diagonal projection, weight (h, out, in)
    h, o, i = weight.shape
    return torch.einsum("...hi,hoi->...ho", x.reshape(*x.shape[:-1], h, i), weight).flatten(-2)


def x_causal_conv_silu(conv, x):  # (b, l, c), a depthwise Conv1d padded by k - 1
    l = x.shape[1]
    return F.silu(conv(x.transpose(1, 2))[..., :l].transpose(1, 2))


class XMBlock(nn.Module):
    """xLSTM's mLSTM block as NX-AI/xlstm's mLSTMLayer with parallel_stabilized_simple."""

    def __init__(self, d, heads, d_conv):
        super().__init__()
        inner = 2 * d
        self.h, self.inner = heads, inner
        self.norm = nn.Parameter(torch.ones(d))
        self.up = nn.Linear(d, 2 * inner, bias=False)
        self.conv = nn.Conv1d(inner, inner, d_conv, groups=inner, padding=d_conv - 1, bias=True)
        self.q = nn.Parameter(torch.zeros(inner // 4, 4, 4))
        self.k = nn.Parameter(torch.zeros(inner // 4, 4, 4))
        self.v = nn.Parameter(torch.zeros(inner // 4, 4, 4))
        self.igate = nn.Linear(3 * inner, heads)
        self.fgate = nn.Linear(3 * inner, heads)
        self.out_norm = nn.Parameter(torch.ones(inner))
        self.skip = nn.Parameter(torch.ones(inner))
        self.down = nn.Linear(inner, d, bias=False)

    def cell(self, q, k, v, ig, fg):  # (b, h, l, dh), gates (b, h, l, 1)
        b, h, l, dh = q.shape
        log_f = F.logsigmoid(fg)
        cum = torch.cat([torch.zeros(b, h, 1, 1), torch.cumsum(log_f, dim=-2)], dim=-2)
        rep = cum.repeat(1, 1, 1, l + 1)
        ltr = torch.tril(torch.ones(l, l, dtype=torch.bool))
        log_fg = torch.where(ltr, (rep - rep.transpose(-2, -1))[:, :, 1:, 1:], -float("inf"))
        log_d = log_fg + ig.transpose(-2, -1)
        max_log_d, _ = torch.max(log_d, dim=-1, keepdim=True)
        dmat = torch.exp(log_d - max_log_d)
        c = (q @ (k / math.sqrt(dh)).transpose(-2, -1)) * dmat
        normalizer = torch.maximum(c.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_d))
        return (c / (normalizer + 1e-6)) @ v

    def forward(self, u):
        b, l, _ = u.shape
        x, z = self.up(x_layer_norm(u, self.norm)).split(self.inner, dim=-1)
        xc = x_causal_conv_silu(self.conv, x)
        q, k, v = x_headwise(xc, self.q), x_headwise(xc, self.k), x_headwise(x, self.v)
        gates = torch.cat([q, k, v], dim=-1)
        heads = lambda t: t.view(b, l, self.h, -1).transpose(1, 2)  # noqa: E731
        ig = self.igate(gates).transpose(-1, -2).unsqueeze(-1)
        fg = self.fgate(gates).transpose(-1, -2).unsqueeze(-1)
        hs = self.cell(heads(q), heads(k), heads(v), ig, fg).transpose(1, 2).reshape(b, l, -1)
        hs = x_head_norm(hs, self.h, self.out_norm)
        return u + self.down((hs + self.skip * xc) * F.silu(z))


class XSBlock(nn.Module):
    """xLSTM's sLSTM block (NX-AI/xlstm's sLSTMLayer, vanilla slstm_forward_pointwise) and its
    gated GELU feed-forward block."""

    def __init__(self, d, heads, d_conv, d_ff):
        super().__init__()
        dh = d // heads
        self.h, self.d_ff = heads, d_ff
        self.norm = nn.Parameter(torch.ones(d))
        self.conv = nn.Conv1d(d, d, d_conv, groups=d, padding=d_conv - 1, bias=True)
        self.gates = nn.Parameter(torch.zeros(4, heads, dh, dh))
        self.recurrent = nn.Parameter(torch.zeros(4, heads, dh, dh))
        self.bias = nn.Parameter(torch.zeros(4, heads, dh))
        self.out_norm = nn.Parameter(torch.ones(d))
        self.ffn_norm = nn.Parameter(torch.ones(d))
        self.up = nn.Linear(d, 2 * d_ff, bias=False)
        self.down = nn.Linear(d_ff, d, bias=False)

    def forward(self, u):
        b, l, d = u.shape
        x = x_layer_norm(u, self.norm)
        xc = x_causal_conv_silu(self.conv, x)
        wx = [x_headwise(xc, self.gates[0]), x_headwise(xc, self.gates[1]),
              x_headwise(x, self.gates[2]), x_headwise(x, self.gates[3])]
        y = c = n = m = torch.zeros(b, d)
        outs = []
        for t in range(l):
            ry = torch.einsum("bhi,ghoi->bgho", y.reshape(b, self.h, -1), self.recurrent) + self.bias
            iraw, fraw, zraw, oraw = (wx[g][:, t] + ry[:, g].reshape(b, d) for g in range(4))
            logfplusm = m + F.logsigmoid(fraw)
            mnew = iraw if t == 0 else torch.max(iraw, logfplusm)
            igate = torch.minimum(torch.exp(iraw - mnew), torch.ones_like(iraw))
            fgate = torch.minimum(torch.exp(logfplusm - mnew), torch.ones_like(iraw))
            c = fgate * c + igate * torch.tanh(zraw)
            n = fgate * n + igate
            y = torch.sigmoid(oraw) * c / n
            m = mnew
            outs.append(y)
        h = u + x_head_norm(torch.stack(outs, 1), self.h, self.out_norm)
        gate, up = self.up(x_layer_norm(h, self.ffn_norm)).split(self.d_ff, dim=-1)
        return h + self.down(F.gelu(gate) * up)


class XLSTM(nn.Module):
    def __init__(self, vocab, blocks="msms", d_model=256, heads=4, d_conv=4, d_ff=None):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(
            XMBlock(d_model, heads, d_conv) if kind == "m" else XSBlock(d_model, heads, d_conv, d_ff)
            for kind in blocks)
        self.norm = nn.Parameter(torch.ones(d_model))
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(x_layer_norm(x, self.norm))



class Composed(nn.Module):
    """The hybrid plugin's models: embedding, blocks (A: a Llama block, M: Mamba, 2: Mamba-2),
    final RMSNorm, head tied to the embedding unless tie_embeddings is false."""

    def __init__(self, vocab, d_model, tie_embeddings, attention, mamba, mamba2):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.norm = RMSNorm(d_model)
        self.tied = tie_embeddings
        if not tie_embeddings:
            self.head = nn.Linear(d_model, vocab, bias=False)
        a = dict(heads=4, d_ff=1024, rope_theta=500000.0) | (attention or {})
        m = dict(expand=2, d_state=64, d_conv=4, dt_rank=16) | (mamba or {})
        m2 = dict(expand=2, headdim=64, d_state=128, ngroups=1, d_conv=4) | (mamba2 or {})
        self.make = {
            "A": lambda: Block(STYLES["llama"], d_model, a["heads"], a["d_ff"], 0.0,
                               a["rope_theta"], 1e-5),
            "M": lambda: MambaBlock(d_model, m["expand"], m["d_state"], m["d_conv"], m["dt_rank"]),
            "2": lambda: Mamba2Block(d_model, m2["expand"], m2["headdim"], m2["d_state"],
                                     m2["ngroups"], m2["d_conv"]),
        }

    def out(self, x):
        x = self.norm(x)
        return x @ self.embed.weight.t() if self.tied else self.head(x)


class Hybrid(Composed):
    def __init__(self, vocab, pattern="MAMA", d_model=256, tie_embeddings=True, attention=None,
                 mamba=None, mamba2=None):
        super().__init__(vocab, d_model, tie_embeddings, attention, mamba, mamba2)
        self.blocks = nn.ModuleList(self.make[kind]() for kind in pattern)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.out(x)


class Looped(Composed):
    """One block applied `loops` times; with inject, z_1 = f(e), z_{i+1} = f(z_i + e)."""

    def __init__(self, vocab, block="A", loops=4, inject=False, d_model=256, tie_embeddings=True,
                 attention=None, mamba=None, mamba2=None):
        super().__init__(vocab, d_model, tie_embeddings, attention, mamba, mamba2)
        self.block = self.make[block]()
        self.loops, self.inject = loops, inject

    def forward(self, tokens):
        e = self.embed(tokens)
        z = e
        for i in range(self.loops):
            z = self.block(z + e if self.inject and i > 0 else z)
        return self.out(z)


def build(name, vocab, max_length, options):
    """The reference model for an induct model name and its resolved options."""
    if name == "lstm":
        return LSTM(vocab, **options)
    if name == "gru":
        return GRU(vocab, **options)
    if name in STYLES:
        return Transformer(name, vocab, max_length, **options)
    if name == "dense_ssm":
        return DenseSSM(vocab, **options)
    if name == "mamba":
        return Mamba(vocab, **options)
    if name == "mamba2":
        return Mamba2(vocab, **options)
    if name == "deltanet":
        return DeltaNet(vocab, **options)
    if name == "xlstm":
        return XLSTM(vocab, **options)
    if name in ("hybrid", "looped"):
        # The C++ side's resolved options also hold initialisation settings the logits do not
        # depend on (dt_min, dt_max) and the chunk size of Mamba-2's scan.
        for section in ("mamba", "mamba2"):
            if section in options:
                options[section] = {k: v for k, v in options[section].items()
                                    if k not in ("dt_min", "dt_max", "chunk_size")}
        return (Hybrid if name == "hybrid" else Looped)(vocab, **options)
    raise ValueError(f"no reference implementation for model '{name}'")
