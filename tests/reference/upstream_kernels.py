#!/usr/bin/env python3
"""The SDK's recurrences against the upstream projects' own reference functions.

Each function below transcribes an upstream project's pure-PyTorch reference (repository, path
and commit in its comment) with three changes only: the `.float()` casts are dropped (so that a
float64 run stays in float64), einops' rearrange and repeat are written as reshape, permute and
expand (einops is not in Debian's python3), and arguments the SDK never passes are left out.

    upstream_kernels.py DIR

DIR holds one folder per case, written by tests/unit/test_conformance.cpp: case.txt
(kernel=..., regime=..., dtype=float32|float64, the kernel's integer options, and one line
`tensor NAME d0 d1 ...` per input), NAME.bin (the input as the SDK got it, raw float64),
out.bin (the SDK's output in the case's dtype, as float64), weights.bin (the upstream gradient
of the output) and grad.NAME.bin (the SDK's gradient of each input). For each case the
reference runs in float64 (the truth) and in the case's dtype; the SDK's output and every
gradient must lie within `tolerance` of the float64 truth, relative to the truth's largest
entry: 1e-8 in float64, and in float32 the larger of 1e-4 and ten times the upstream
reference's own float32 error. Prints one line per case and `ok` when every case passed.
Needs Debian's python3-torch (torch 1.13).
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F


# --- flash-linear-attention (fla-org/flash-linear-attention, commit
# bc3b101dcb713ddc5bd8924b66754eb68b5ccf89) ---

def fla_delta_rule_recurrence(q, k, v, beta):
    # fla/ops/delta_rule/naive.py: delta_rule_recurrence (q [B, H, T, K]; it scales q by
    # K^-0.5 itself).
    b, h, l, d_k = q.shape
    d_v = v.shape[-1]
    o = torch.zeros_like(v)
    S = torch.zeros(b, h, d_k, d_v).to(v)
    q = q * (d_k ** -0.5)
    if beta.ndim < v.ndim:
        beta = beta[..., None]
    for i in range(l):
        _k = k[:, :, i]
        _q = q[:, :, i]
        _v = v[:, :, i].clone()
        beta_i = beta[:, :, i]
        _v = _v - (S.clone() * _k[..., None]).sum(-2)
        _v = _v * beta_i
        S = S.clone() + _k.unsqueeze(-1) * _v.unsqueeze(-2)
        o[:, :, i] = torch.einsum('bhd,bhdm->bhm', _q, S)
    return o


def fla_naive_recurrent_gated_delta_rule(q, k, v, beta, g, scale):
    # fla/ops/gated_delta_rule/naive.py: naive_recurrent_gated_delta_rule (q [B, T, H, K]).
    q, k, v, beta, g = map(lambda x: x.transpose(1, 2).contiguous(), [q, k, v, beta, g])
    B, H, T, K, V = *k.shape, v.shape[-1]
    o = torch.zeros(B, H, T, V).to(v)
    h = torch.zeros(B, H, K, V).to(v)
    q = q * scale
    for i in range(T):
        b_q = q[:, :, i]
        b_k = k[:, :, i]
        b_v = v[:, :, i].clone()
        h = h.clone() * g[:, :, i].exp()[..., None, None]
        b_beta = beta[:, :, i]
        b_v = b_v - (h.clone() * b_k[..., None]).sum(-2)
        b_v = b_v * b_beta[..., None]
        h = h.clone() + b_k.unsqueeze(-1) * b_v.unsqueeze(-2)
        o[:, :, i] = torch.einsum('bhd,bhdm->bhm', b_q, h)
    return o.transpose(1, 2).contiguous()


def fla_naive_recurrent_gated_delta_product(q, k, v, g, beta, num_householder):
    # fla/ops/gated_delta_product/naive.py: naive_recurrent_gated_delta_product (q [B, T, H, K],
    # k and v [B, T n, H, *], beta [B, T n, H], g [B, T, H] or None; it applies no scale).
    B, T, H, K = q.shape
    V = v.shape[-1]
    h = torch.zeros(B, H, K, V, dtype=q.dtype)
    o = torch.zeros(B, T, H, V, dtype=q.dtype)
    for i in range(T):
        if g is not None:
            h = h * g[:, i, :].exp()[..., None, None]
        for j in range(num_householder):
            k_ij = k[:, i * num_householder + j, :, :]
            v_ij = v[:, i * num_householder + j, :, :]
            beta_ij = beta[:, i * num_householder + j, :]
            h = h + (v_ij - (h * k_ij[..., None]).sum(-2)).unsqueeze(-2) * k_ij[..., None] * beta_ij[..., None, None]
        q_i = q[:, i, :, :]
        o_i = (h * q_i[..., None]).sum(-2)
        o[:, i] = o_i
    return o


# --- Mamba (state-spaces/mamba, commit e9594ce1c732d97440f0332fdc43170a2294dbfa) ---

def mamba_selective_scan_ref(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False):
    # mamba_ssm/ops/selective_scan_interface.py: selective_scan_ref, real A, B and C of shape
    # [B, N, L] (u, delta, z [B, D, L]).
    if delta_bias is not None:
        delta = delta + delta_bias[..., None]
    if delta_softplus:
        delta = F.softplus(delta)
    batch, dim, dstate = u.shape[0], A.shape[0], A.shape[1]
    x = A.new_zeros((batch, dim, dstate))
    ys = []
    deltaA = torch.exp(torch.einsum('bdl,dn->bdln', delta, A))
    deltaB_u = torch.einsum('bdl,bnl,bdl->bdln', delta, B, u)
    for i in range(u.shape[2]):
        x = deltaA[:, :, i] * x + deltaB_u[:, :, i]
        y = torch.einsum('bdn,bn->bd', x, C[:, :, i])
        ys.append(y)
    y = torch.stack(ys, dim=2)
    out = y if D is None else y + u * D[:, None]
    if z is not None:
        out = out * F.silu(z)
    return out


def mamba_segsum(x):
    # mamba_ssm/modules/ssd_minimal.py: segsum (the stable one).
    T = x.size(-1)
    x = x[..., None].expand(*x.shape, T)
    mask = torch.tril(torch.ones(T, T, dtype=bool), diagonal=-1)
    x = x.masked_fill(~mask, 0)
    x_segsum = torch.cumsum(x, dim=-2)
    mask = torch.tril(torch.ones(T, T, dtype=bool), diagonal=0)
    x_segsum = x_segsum.masked_fill(~mask, -torch.inf)
    return x_segsum


def mamba_ssd_minimal_discrete(X, A, B, C, block_len):
    # mamba_ssm/modules/ssd_minimal.py: ssd_minimal_discrete (X [b, L, h, p], A [b, L, h],
    # B and C [b, L, h, n]; L a multiple of block_len).
    b, L, h, p = X.shape
    c = L // block_len
    X, A, B, C = [x.reshape(b, c, block_len, *x.shape[2:]) for x in (X, A, B, C)]
    A = A.permute(0, 3, 1, 2)  # b h c l
    A_cumsum = torch.cumsum(A, dim=-1)
    L_ = torch.exp(mamba_segsum(A))
    Y_diag = torch.einsum("bclhn,bcshn,bhcls,bcshp->bclhp", C, B, L_, X)
    decay_states = torch.exp((A_cumsum[:, :, :, -1:] - A_cumsum))
    states = torch.einsum("bclhn,bhcl,bclhp->bchpn", B, decay_states, X)
    initial_states = torch.zeros_like(states[:, :1])
    states = torch.cat([initial_states, states], dim=1)
    decay_chunk = torch.exp(mamba_segsum(F.pad(A_cumsum[:, :, :, -1], (1, 0))))
    new_states = torch.einsum("bhzc,bchpn->bzhpn", decay_chunk, states)
    states = new_states[:, :-1]
    state_decay_out = torch.exp(A_cumsum)
    Y_off = torch.einsum('bclhn,bchpn,bhcl->bclhp', C, states, state_decay_out)
    return (Y_diag + Y_off).reshape(b, L, h, p)


# --- xLSTM (NX-AI/xlstm, commit 032a6fb8ee19a8c0db80ae6111ff4744a09414a9) ---

def xlstm_slstm_forward_pointwise(Wx, Ry, b, states):
    # xlstm/blocks/slstm/src/vanilla/slstm.py: slstm_forward_pointwise.
    raw = Wx + Ry + b
    y, c, n, m = torch.unbind(states.view(4, states.shape[1], -1), dim=0)
    iraw, fraw, zraw, oraw = torch.unbind(raw.view(raw.shape[0], 4, -1), dim=1)
    logfplusm = m + F.logsigmoid(fraw)
    if torch.all(n == 0.0):
        mnew = iraw
    else:
        mnew = torch.max(iraw, logfplusm)
    ogate = torch.sigmoid(oraw)
    igate = torch.minimum(torch.exp(iraw - mnew), torch.ones_like(iraw))
    fgate = torch.minimum(torch.exp(logfplusm - mnew), torch.ones_like(iraw))
    cnew = fgate * c + igate * torch.tanh(zraw)
    nnew = fgate * n + igate
    ynew = ogate * cnew / nnew
    return torch.stack((ynew, cnew, nnew, mnew), dim=0)


def xlstm_slstm_forward(x, states, R, b):
    # xlstm/blocks/slstm/src/vanilla/__init__.py: slstm_forward with the sLSTM pointwise
    # function (x [S, B, 4 NH DH] gate-major, states [4, B, NH DH], R [NH, 4 DH, DH], b [4 NH DH]).
    num_states = states.shape[0]
    sequence_dim = x.shape[0]
    num_gates_r = R.shape[1] // R.shape[2]
    hidden_dim = R.shape[2] * R.shape[0]
    batch_dim = x.shape[1]
    num_heads = R.shape[0]
    head_dim = R.shape[2]
    states_all = torch.zeros([num_states, sequence_dim + 1, batch_dim, hidden_dim], dtype=x.dtype)
    states_all[:, 0] = states
    for i, Wx_t in enumerate(x.unbind(dim=0)):
        Ry = (states[0].reshape(batch_dim, num_heads, 1, -1)
              .matmul(R.transpose(1, 2).reshape(1, num_heads, head_dim, num_gates_r * head_dim))
              .reshape(batch_dim, num_heads, num_gates_r, -1)
              .transpose(1, 2)
              .reshape(batch_dim, -1))
        states = xlstm_slstm_forward_pointwise(Wx_t, Ry, b, states)
        states_all[:, i + 1] = states
    return states_all


def xlstm_parallel_stabilized_simple(queries, keys, values, igate_preact, fgate_preact, eps=1e-6):
    # xlstm/blocks/mlstm/backends.py: parallel_stabilized_simple (stabilize_rowwise).
    B, NH, S, DH = queries.shape
    _dtype = queries.dtype
    log_fgates = F.logsigmoid(fgate_preact)
    ltr = torch.tril(torch.ones((S, S), dtype=torch.bool))
    log_fgates_cumsum = torch.cat(
        [torch.zeros((B, NH, 1, 1), dtype=_dtype), torch.cumsum(log_fgates, dim=-2)], dim=-2)
    rep_log_fgates_cumsum = log_fgates_cumsum.repeat(1, 1, 1, S + 1)
    _log_fg_matrix = rep_log_fgates_cumsum - rep_log_fgates_cumsum.transpose(-2, -1)
    log_fg_matrix = torch.where(ltr, _log_fg_matrix[:, :, 1:, 1:], -float("inf"))
    log_D_matrix = log_fg_matrix + igate_preact.transpose(-2, -1)
    max_log_D, _ = torch.max(log_D_matrix, dim=-1, keepdim=True)
    log_D_matrix_stabilized = log_D_matrix - max_log_D
    D_matrix = torch.exp(log_D_matrix_stabilized)
    keys_scaled = keys / math.sqrt(DH)
    qk_matrix = queries @ keys_scaled.transpose(-2, -1)
    C_matrix = qk_matrix * D_matrix
    normalizer = torch.maximum(C_matrix.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))
    C_matrix_normalized = C_matrix / (normalizer + eps)
    return C_matrix_normalized @ values


# --- The cases: each kernel's inputs in the SDK's layout, to the upstream function ---

def delta(t, o):  # delta_rule(q, k, v, beta, {}, chunk): q not scaled
    q, k, v, beta = t["q"], t["k"], t["v"], t["beta"]
    return fla_delta_rule_recurrence(q * math.sqrt(q.shape[-1]), k, v, beta)


def gated_delta(t, o):  # delta_rule(q, k, v, beta, log_decay, chunk)
    tr = lambda x: x.transpose(1, 2)
    out = fla_naive_recurrent_gated_delta_rule(tr(t["q"]), tr(t["k"]), tr(t["v"]), tr(t["beta"]),
                                               tr(t["log_decay"]), 1.0)
    return out.transpose(1, 2)


def delta_product(t, o):  # delta_product(q, k, v, beta, log_decay or {}, n, chunk)
    tr = lambda x: x.transpose(1, 2)
    g = tr(t["log_decay"]) if "log_decay" in t else None
    out = fla_naive_recurrent_gated_delta_product(tr(t["q"]), tr(t["k"]), tr(t["v"]), g,
                                                  tr(t["beta"]), o["householder"])
    return out.transpose(1, 2)


def selective_scan(t, o):  # selective_scan(x, delta, A, Bm, C, D, {delta_bias, softplus, z})
    tr = lambda x: x.transpose(1, 2)  # [B, T, *] -> [B, *, T]
    out = mamba_selective_scan_ref(tr(t["x"]), tr(t["delta"]), t["A"], tr(t["Bm"]), tr(t["C"]),
                                   t["D"], tr(t["z"]), t["delta_bias"], True)
    return tr(out)


def ssd(t, o):  # ssd_scan(x, a, Bm, C, chunk): groups G dividing heads H
    x, a, Bm, C = t["x"], t["a"], t["Bm"], t["C"]
    H, G = x.shape[2], Bm.shape[2]
    per_head = lambda m: m.repeat_interleave(H // G, dim=2)  # head h reads group h / (H / G)
    return mamba_ssd_minimal_discrete(x, a, per_head(Bm), per_head(C), o["block"])


def slstm(t, o):  # slstm_recurrence(pre [B, T, 4, H, D], recurrent [4, H, D, D], bias [4, H, D])
    pre, recurrent, bias = t["pre"], t["recurrent"], t["bias"]
    B, T, _, H, D = pre.shape
    x = pre.reshape(B, T, 4 * H * D).transpose(0, 1)
    R = recurrent.permute(1, 0, 2, 3).reshape(H, 4 * D, D)  # R[h, g D + o, i]
    states = torch.zeros(4, B, H * D, dtype=pre.dtype)
    return xlstm_slstm_forward(x, states, R, bias.reshape(-1))[0, 1:].transpose(0, 1)


def mlstm(t, o):  # mlstm_parallel(q, k, v, igate, fgate)
    return xlstm_parallel_stabilized_simple(t["q"], t["k"], t["v"], t["igate"], t["fgate"])


def recurrent_layer(cls, t):
    x = t["x"]
    layer = cls(x.shape[-1], t["w_hh"].shape[-1], batch_first=True).to(x.dtype)
    # torch's own nn.LSTM / nn.GRU, its parameters replaced by the case's (differentiable) ones.
    for name in ("weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"):
        delattr(layer, name)
    layer.weight_ih_l0, layer.weight_hh_l0 = t["w_ih"], t["w_hh"]
    layer.bias_ih_l0, layer.bias_hh_l0 = t["b_ih"], t["b_hh"]
    layer._flat_weights = [t["w_ih"], t["w_hh"], t["b_ih"], t["b_hh"]]
    return layer(x)[0]


KERNELS = {
    "delta": delta,
    "gated_delta": gated_delta,
    "delta_product": delta_product,
    "selective_scan": selective_scan,
    "ssd": ssd,
    "slstm": slstm,
    "mlstm": mlstm,
    "lstm": lambda t, o: recurrent_layer(torch.nn.LSTM, t),
    "gru": lambda t, o: recurrent_layer(torch.nn.GRU, t),
}


def read_case(folder):
    settings, shapes = {}, {}
    with open(os.path.join(folder, "case.txt")) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("tensor "):
                parts = line.split()
                shapes[parts[1]] = [int(s) for s in parts[2:]]
            elif "=" in line:
                key, value = line.split("=", 1)
                settings[key] = value
    raw = lambda name, shape: torch.from_numpy(
        np.fromfile(os.path.join(folder, name), dtype=np.float64).reshape(shape))
    inputs = {name: raw(name + ".bin", shape) for name, shape in shapes.items()}
    return settings, inputs, raw


def reference(kernel, inputs, options, weights, dtype):
    leaves = {n: t.detach().to(dtype).clone().requires_grad_(True) for n, t in inputs.items()}
    out = kernel(leaves, options)
    (out * weights.to(dtype)).sum().backward()
    return [out.detach().double()] + [leaves[n].grad.double() for n in inputs]


def main():
    root = sys.argv[1]
    failed = 0
    for name in sorted(os.listdir(root), key=lambda n: (len(n), n)):
        folder = os.path.join(root, name)
        settings, inputs, raw = read_case(folder)
        options = {k: int(v) for k, v in settings.items() if v.lstrip("-").isdigit()}
        kernel = KERNELS[settings["kernel"]]
        dtype = torch.float32 if settings["dtype"] == "float32" else torch.float64
        out_shape = [int(s) for s in settings["out"].split(",")]
        sdk = [raw("out.bin", out_shape)] + [raw("grad." + n + ".bin", t.shape) for n, t in inputs.items()]
        weights = raw("weights.bin", out_shape)
        truth = reference(kernel, inputs, options, weights, torch.float64)
        own = reference(kernel, inputs, options, weights, dtype) if dtype != torch.float64 else truth
        names = ["out"] + ["d" + n for n in inputs]
        report, ok = [], True
        for label, s, t, u in zip(names, sdk, truth, own):
            scale = max(t.abs().max().item(), 1e-30)
            error = (s - t).abs().max().item() / scale
            upstream = (u - t).abs().max().item() / scale
            tolerance = 1e-8 if dtype == torch.float64 else max(1e-4, 10 * upstream)
            if not error <= tolerance:  # (NaN fails)
                ok = False
            report.append(f"{label} {error:.1e}" + (f" (upstream {upstream:.1e})" if dtype != torch.float64 else ""))
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {settings['kernel']} {settings['dtype']} "
              f"[{settings['regime']}]: " + ", ".join(report))
    print("ok" if failed == 0 else f"{failed} case(s) failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
