#!/usr/bin/python3
"""Baseline for `spade bench sampler` (issue 4): a plain PyTorch-in-Python KV-cache generate loop on
the same weights (an HF-layout checkpoint written by the bench), same prompts, same sampling.

  sampler_ref.py --checkpoint DIR --batch B --prompt P --new N [--threads T]

Prompts: B sequences of P ids, id[i][t] = (i * 131 + t * 17) % vocab (as the C++ side).
Sampling: temperature 0.6, top-k 20, top-p 0.95 (SPADE defaults), logprobs of the sampled tokens
under the unfiltered temperature-scaled distribution (as our sampler); no stop tokens, so every
sequence generates exactly N tokens. Cache: preallocated [B, kv_heads, P+N, head_dim] per layer
(no per-step concatenation). Prints one JSON line: {"tokens", "seconds", "prefill_s", "decode_s",
"tokens_per_s", "threads"}. Forward as in tests/policy/reference_forward.py (llama/qwen2/qwen3).
On CUDA one untimed warm-up run of 4 new tokens on the same batch comes first (as the C++ side and
sampler_hf.py do); the cache is simply overwritten by the timed run.
"""
import argparse
import json
import math
import os
import sys
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "policy"))
from reference_forward import inv_freq, load_weights, rms_norm, rotate_half  # noqa: E402


class Model:
    def __init__(self, ckpt):
        self.cfg = json.load(open(os.path.join(ckpt, "config.json")))
        self.w = load_weights(ckpt)
        c = self.cfg
        self.nh = c["num_attention_heads"]
        self.kvh = c.get("num_key_value_heads") or self.nh
        self.d = c.get("head_dim") or c["hidden_size"] // self.nh
        self.eps = c["rms_norm_eps"]
        self.inv_freq = inv_freq(c, self.d)
        self.head = self.w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else self.w["lm_head.weight"]

    def lin(self, h, name):
        w = self.w
        b = w.get(name + ".bias")
        return torch.nn.functional.linear(h, w[name + ".weight"], b)

    def forward(self, ids, start, cache):
        """ids [B, T] at positions start..start+T-1; cache: list of (K, V) [B, kvh, max, d]."""
        B, T = ids.shape
        w, nh, kvh, d = self.w, self.nh, self.kvh, self.d
        x = w["model.embed_tokens.weight"][ids]
        pos = torch.arange(start, start + T, device=ids.device).float()
        freqs = torch.outer(pos, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        S = start + T
        mask = None
        if T > 1:
            mask = torch.ones(T, S, dtype=torch.bool, device=ids.device).tril(diagonal=start)
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = rms_norm(x, w[p + "input_layernorm.weight"], self.eps)
            q = self.lin(h, p + "self_attn.q_proj").view(B, T, nh, d).transpose(1, 2)
            k = self.lin(h, p + "self_attn.k_proj").view(B, T, kvh, d).transpose(1, 2)
            v = self.lin(h, p + "self_attn.v_proj").view(B, T, kvh, d).transpose(1, 2)
            if p + "self_attn.q_norm.weight" in w:
                q = rms_norm(q, w[p + "self_attn.q_norm.weight"], self.eps)
                k = rms_norm(k, w[p + "self_attn.k_norm.weight"], self.eps)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
            K, V = cache[i]
            K[:, :, start:S] = k
            V[:, :, start:S] = v
            k, v = K[:, :, :S], V[:, :, :S]
            qg = q.reshape(B, kvh, nh // kvh, T, d)
            s = torch.matmul(qg, k.unsqueeze(2).transpose(-1, -2)) / math.sqrt(d)
            if mask is not None:
                s = s.masked_fill(~mask, float("-inf"))
            a = torch.matmul(torch.softmax(s.float(), dim=-1).to(v.dtype), v.unsqueeze(2)).reshape(B, nh, T, d)
            x = x + self.lin(a.transpose(1, 2).reshape(B, T, nh * d), p + "self_attn.o_proj")
            h = rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps)
            x = x + self.lin(torch.nn.functional.silu(self.lin(h, p + "mlp.gate_proj")) * self.lin(h, p + "mlp.up_proj"),
                             p + "mlp.down_proj")
        return rms_norm(x, w["model.norm.weight"], self.eps)


def sample(logits, gen, temperature=0.6, top_k=20, top_p=0.95):
    z = logits / temperature
    vals, cand = z.topk(top_k, dim=-1)
    probs = torch.softmax(vals, dim=-1)
    keep = (probs.cumsum(-1) - probs) < top_p
    probs = probs * keep
    pick = torch.multinomial(probs, 1, generator=gen)
    tok = cand.gather(-1, pick).squeeze(-1)
    logp = torch.log_softmax(z, dim=-1).gather(-1, tok.unsqueeze(-1)).squeeze(-1)
    return tok, logp


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--new", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    m = Model(a.checkpoint)
    dev, dt = torch.device(a.device), getattr(torch, a.dtype)
    m.w = {k: v.to(dev, dt) for k, v in m.w.items()}
    m.inv_freq = m.inv_freq.to(dev)
    m.head = (m.w["model.embed_tokens.weight"] if m.cfg.get("tie_word_embeddings") else m.w["lm_head.weight"])
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    vocab = m.cfg["vocab_size"]
    ids = torch.tensor([[(i * 131 + t * 17) % vocab for t in range(a.prompt)] for i in range(a.batch)], device=dev)
    cap = a.prompt + a.new
    cache = [(torch.zeros(a.batch, m.kvh, cap, m.d, device=dev, dtype=dt),
              torch.zeros(a.batch, m.kvh, cap, m.d, device=dev, dtype=dt))
             for _ in range(m.cfg["num_hidden_layers"])]
    gen = torch.Generator(device=dev).manual_seed(0)

    def run(new):
        """Prefill, then `new` sampled tokens per sequence; returns (start, prefill done, end) times."""
        sync()
        t0 = time.perf_counter()
        h = m.forward(ids, 0, cache)
        logits = (h[:, -1] @ m.head.t()).float()
        sync()
        t1 = time.perf_counter()
        for step in range(new):
            tok, _ = sample(logits, gen)
            if step + 1 == new:
                break
            h = m.forward(tok.view(-1, 1), a.prompt + step, cache)
            logits = (h[:, -1] @ m.head.t()).float()
        sync()
        return t0, t1, time.perf_counter()

    if dev.type == "cuda":  # first-call costs (cuBLAS handles, kernel loading) outside the timing
        run(min(4, a.new))
    t0, t1, t2 = run(a.new)
    n = a.batch * a.new
    print(json.dumps({"tokens": n, "seconds": t2 - t0, "prefill_s": t1 - t0, "decode_s": t2 - t1,
                      "tokens_per_s": n / (t2 - t0), "threads": torch.get_num_threads()}))


if __name__ == "__main__":
    main()
