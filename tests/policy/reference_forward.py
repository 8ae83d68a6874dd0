#!/usr/bin/python3
"""Independent reference forward for spade's parity test (issue 4), in PyTorch, written from the
Hugging Face architecture descriptions (modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py /
modeling_qwen3_moe.py),
NOT from spade's C++ code. Reads config.json + safetensors (single file or sharded with
model.safetensors.index.json) with its own parser.

Usage: reference_forward.py JOBS.json
  JOBS.json: [{"checkpoint": DIR, "ids": [[...], ...], "out": FILE}, ...]
  For each job, writes the logits of every sequence to FILE as raw little-endian float32,
  sequences concatenated, each [len(ids), vocab_size]. Prints one line per job.

Architecture (decoder-only, pre-norm):
  x = embed_tokens[ids]
  per layer:  h = RMSNorm(x) (computed in fp32, cast back, times weight)
              q, k, v = h W_q^T (+b_q), h W_k^T (+b_k), h W_v^T (+b_v)     (qwen2: biases; llama/qwen3: if present)
              qwen3: q, k = RMSNorm over head_dim (per head) with q_norm / k_norm
              q, k = RoPE rotate-half: x*cos + rotate_half(x)*sin, inv_freq = theta^(-2i/d) in fp32,
                     llama3 scaling when rope_scaling.rope_type == "llama3"
              k, v repeated to the query heads (repeat_kv), causal softmax(q k^T / sqrt(head_dim)) in fp32
              x = x + o_proj(attn) (+ bias if present)
              x = x + down(silu(gate(RMSNorm(x))) * up(RMSNorm(x)))
                  (qwen3_moe sparse layers: x + sum over the router's top-k experts of p_e * expert_e(RMSNorm(x)),
                   p = softmax(router logits) in fp32, renormalised over the top-k if norm_topk_prob)
  logits = RMSNorm(x) lm_head^T   (lm_head = embed_tokens when tie_word_embeddings)
"""
import json
import math
import os
import struct
import sys

import numpy as np
import torch

DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32}


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name == "__metadata__":
            continue
        b, end = e["data_offsets"]
        raw = data[base + b:base + end]
        if e["dtype"] == "BF16":  # bfloat16 = upper 16 bits of a float32
            u = np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16
            arr = u.view(np.float32)
        else:
            arr = np.frombuffer(raw, dtype=DTYPES[e["dtype"]])
        out[name] = torch.from_numpy(arr.astype(np.float32).reshape(e["shape"]).copy())
    return out


def load_weights(ckpt):
    index = os.path.join(ckpt, "model.safetensors.index.json")
    if os.path.exists(index):
        files = sorted(set(json.load(open(index))["weight_map"].values()))
        w = {}
        for f in files:
            w.update(read_safetensors(os.path.join(ckpt, f)))
        return w
    return read_safetensors(os.path.join(ckpt, "model.safetensors"))


def rms_norm(x, w, eps):
    xf = x.float()
    return w * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def inv_freq(cfg, d):
    rp = cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta"))
    f = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=torch.int64).float() / d))
    sc = cfg.get("rope_scaling") or (rp if rp.get("rope_type", "default") != "default" else None)
    if sc and sc.get("rope_type", sc.get("type")) == "llama3":
        factor, low, high = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
        old = sc["original_max_position_embeddings"]
        low_wl, high_wl = old / low, old / high
        wl = 2 * math.pi / f
        scaled = torch.where(wl > low_wl, f / factor, f)
        smooth = (old / wl - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wl < high_wl) & ~(wl > low_wl)
        f = torch.where(medium, smoothed, scaled)
    return f


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def moe(cfg, w, p, h):
    """Qwen3MoeSparseMoeBlock, token by token: router softmax (fp32) -> top-k experts -> optional
    renormalisation (norm_topk_prob) -> sum of weight * SwiGLU expert(x)."""
    probs = torch.softmax((h @ w[p + "gate.weight"].t()).float(), dim=-1)
    top_p, top_i = torch.topk(probs, cfg["num_experts_per_tok"], dim=-1)
    if cfg.get("norm_topk_prob", False):
        top_p = top_p / top_p.sum(dim=-1, keepdim=True)
    out = torch.zeros_like(h)
    for t in range(h.shape[0]):
        for j in range(top_i.shape[1]):
            e = f"{p}experts.{int(top_i[t, j])}."
            xt = h[t]
            y = w[e + "down_proj.weight"] @ (torch.nn.functional.silu(w[e + "gate_proj.weight"] @ xt) *
                                             (w[e + "up_proj.weight"] @ xt))
            out[t] += top_p[t, j].to(h.dtype) * y
    return out


def forward(cfg, w, ids):
    H = cfg["hidden_size"]
    nh = cfg["num_attention_heads"]
    kvh = cfg.get("num_key_value_heads") or nh
    d = cfg.get("head_dim") or H // nh
    eps = cfg["rms_norm_eps"]
    T = len(ids)
    x = w["model.embed_tokens.weight"][torch.tensor(ids)]          # [T, H]
    pos = torch.arange(T).float()
    freqs = torch.outer(pos, inv_freq(cfg, d))                       # [T, d/2]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    causal = torch.ones(T, T, dtype=torch.bool).tril()

    def lin(h, name):
        y = h @ w[name + ".weight"].t()
        if name + ".bias" in w:
            y = y + w[name + ".bias"]
        return y

    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        h = rms_norm(x, w[p + "input_layernorm.weight"], eps)
        q = lin(h, p + "self_attn.q_proj").view(T, nh, d).transpose(0, 1)    # [nh, T, d]
        k = lin(h, p + "self_attn.k_proj").view(T, kvh, d).transpose(0, 1)   # [kvh, T, d]
        v = lin(h, p + "self_attn.v_proj").view(T, kvh, d).transpose(0, 1)
        if p + "self_attn.q_norm.weight" in w:  # qwen3
            q = rms_norm(q, w[p + "self_attn.q_norm.weight"], eps)
            k = rms_norm(k, w[p + "self_attn.k_norm.weight"], eps)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k = k.repeat_interleave(nh // kvh, dim=0)
        v = v.repeat_interleave(nh // kvh, dim=0)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(d)
        s = s.masked_fill(~causal, float("-inf"))
        a = torch.softmax(s.float(), dim=-1).to(q.dtype) @ v                # [nh, T, d]
        x = x + lin(a.transpose(0, 1).reshape(T, nh * d), p + "self_attn.o_proj")
        h = rms_norm(x, w[p + "post_attention_layernorm.weight"], eps)
        if p + "mlp.gate.weight" in w:  # qwen3_moe sparse layer
            x = x + moe(cfg, w, p + "mlp.", h)
        else:
            g = torch.nn.functional.silu(lin(h, p + "mlp.gate_proj")) * lin(h, p + "mlp.up_proj")
            x = x + lin(g, p + "mlp.down_proj")
    x = rms_norm(x, w["model.norm.weight"], eps)
    head = w["model.embed_tokens.weight"] if cfg.get("tie_word_embeddings") else w["lm_head.weight"]
    return (x @ head.t()).float()


def main():
    torch.set_grad_enabled(False)
    jobs = json.load(open(sys.argv[1]))
    for job in jobs:
        cfg = json.load(open(os.path.join(job["checkpoint"], "config.json")))
        if cfg["model_type"] not in ("llama", "qwen2", "qwen3", "qwen3_moe"):
            raise SystemExit(f"reference_forward: unsupported model_type {cfg['model_type']}")
        w = load_weights(job["checkpoint"])
        with open(job["out"], "wb") as f:
            for ids in job["ids"]:
                f.write(forward(cfg, w, ids).contiguous().numpy().astype("<f4").tobytes())
        print(f"{cfg['model_type']}: {len(job['ids'])} sequences -> {job['out']}")


if __name__ == "__main__":
    main()
