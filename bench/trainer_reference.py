#!/usr/bin/python3
"""Baseline for `spade bench trainer` (issue 5): one GRPO / PPO-clip optimizer step in plain
PyTorch-in-Python, on the same weights, batch, loss and optimizer as spade's trainer::grpo_update.

  trainer_reference.py --checkpoint DIR --batch-file FILE [--steps N] [--warmup W] [--threads T]
                       [--lr .. --beta1 .. --beta2 .. --adam-eps .. --weight-decay .. --grad-clip ..]
                       [--eps-low .. --eps-high .. --tis-cap .. --tis-low .. --agg-mode ..]
                       [--micro-batch-tokens ..]

Inputs (written by the C++ side):
  DIR         an HF-layout llama checkpoint (config.json + model.safetensors), read with the small
              safetensors parser of tests/policy/reference_forward.py (python3-safetensors is not in
              Debian 12).
  FILE        JSON {"samples": [{"tokens": [...], "loss_mask": [...], "rollout_logprobs": [...],
              "advantage": a, "temperature": t}, ...]}.
Output: one JSON line {"step_s": [...] (wall), "step_cpu_s": [...] (process CPU time), "first": {"pg_loss", "entropy", "grad_norm", ...},
"peak_rss_mb", "phases_s": {...}, "threads", "torch"}.

What one step does (each line mirrors the C++ code named, so the two sides do the same work):
  pack        trainer::pack_micro_batches: samples sorted by length (stable), greedy split so a
              micro-batch's padded tokens (max_len * rows) stay within --micro-batch-tokens; inputs
              tokens[:-1], targets/mask/rollout logprobs tokens[1:], right-padded with 0.
  forward     policy::Transformer::forward (llama: RMSNorm in fp32, rotate-half RoPE from fp32 angles,
              grouped-query attention as batched GEMMs over (batch, kv head) with the g query heads
              of a kv head stacked as g*T rows, causal mask, softmax in fp32, SwiGLU MLP), tied lm_head,
              then trainer::sequence_logprobs: log_softmax(logits / temperature) gathered at the
              targets (with grad) and the entropy -(p log p) from a second log_softmax without grad.
  loss        trainer::compute_policy_loss with the default config (configs/games-tiny.yaml keeps the
              loss.* defaults of trainer/config.h): old_logp = logp.detach() (one PPO epoch),
              ratio = exp(clamp(logp - old, +-20)), pg = max(-A r, -A clip(r, 1-0.2, 1+0.28)),
              TIS w = clamp(exp(old - rollout), 0, 2) (detached), aggregation seq_mean_token_mean
              with the global normaliser (rows of all micro-batches), and the same metrics
              (clipfrac, ppo_kl, tis_mean, tis_clipfrac, |old - rollout|, entropy), each read with
              .item() as the C++ code does.
  backward    loss.backward() per micro-batch (gradients accumulate).
  clip        torch.nn.utils.clip_grad_norm_(params, --grad-clip).
  optimizer   torch.optim.AdamW (single-tensor loop, foreach=False, as LibTorch's C++ AdamW), then
              zero_grad(set_to_none=False) (LibTorch 1.13's C++ zero_grad zeroes in place).
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "policy"))
from reference_forward import inv_freq, load_weights  # noqa: E402


def peak_rss_mb():
    """VmHWM of this process in MiB (reset by reset_peak_rss), or ru_maxrss if /proc is missing."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def reset_peak_rss():
    """Resets VmHWM to the current RSS (Linux >= 4.0: write 5 to /proc/self/clear_refs)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


class Model:
    """The llama decoder of policy::Transformer with trainable leaf tensors named as in the checkpoint."""

    def __init__(self, ckpt):
        self.cfg = c = json.load(open(os.path.join(ckpt, "config.json")))
        if c["model_type"] != "llama" or c.get("attention_bias") or c.get("num_experts"):
            raise SystemExit("trainer_reference: only dense llama checkpoints without biases are supported, got "
                             + c["model_type"])
        self.w = {k: v.clone().requires_grad_(True) for k, v in load_weights(ckpt).items()}
        self.nh = c["num_attention_heads"]
        self.kvh = c.get("num_key_value_heads") or self.nh
        self.d = c.get("head_dim") or c["hidden_size"] // self.nh
        self.eps = c["rms_norm_eps"]
        self.inv_freq = inv_freq(c, self.d)
        self.head = self.w["model.embed_tokens.weight"] if c.get("tie_word_embeddings") else self.w["lm_head.weight"]

    def parameters(self):
        return list(self.w.values())

    @staticmethod
    def rms_norm(x, weight, eps):
        xf = x.to(torch.float32)
        return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)

    @staticmethod
    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + torch.cat((-x[..., half:], x[..., :half]), -1) * sin

    def forward(self, ids, positions):
        """ids, positions [B, T] int64 -> final-normed hidden states [B, T, hidden] float32."""
        B, T = ids.shape
        w, nh, kvh, d = self.w, self.nh, self.kvh, self.d
        g = nh // kvh
        scale = 1.0 / math.sqrt(d)
        q_slot = torch.arange(0, T).view(T, 1)
        k_slot = torch.arange(0, T).view(1, T)
        mask = (k_slot <= q_slot).view(1, 1, 1, T, T)
        x = F.embedding(ids, w["model.embed_tokens.weight"])
        freqs = positions.to(torch.float32).unsqueeze(-1) * self.inv_freq.view(1, 1, -1)
        emb = torch.cat((freqs, freqs), -1).unsqueeze(1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for i in range(self.cfg["num_hidden_layers"]):
            p = f"model.layers.{i}."
            h = self.rms_norm(x, w[p + "input_layernorm.weight"], self.eps)
            q = F.linear(h, w[p + "self_attn.q_proj.weight"]).view(B, T, nh, d)
            k = F.linear(h, w[p + "self_attn.k_proj.weight"]).view(B, T, kvh, d)
            v = F.linear(h, w[p + "self_attn.v_proj.weight"]).view(B, T, kvh, d)
            q = self.rotate(q.transpose(1, 2), cos, sin)
            k = self.rotate(k.transpose(1, 2), cos, sin)
            v = v.transpose(1, 2)
            qg = q.reshape(B, kvh, g * T, d)
            scores = torch.matmul(qg, k.transpose(-1, -2)).mul_(scale)
            scores.view(B, kvh, g, T, T).masked_fill_(mask.logical_not(), float("-inf"))
            probs = torch.softmax(scores, -1, dtype=torch.float32).to(q.dtype)
            attn = torch.matmul(probs, v).view(B, nh, T, d).transpose(1, 2).reshape(B, T, nh * d)
            x = x + F.linear(attn, w[p + "self_attn.o_proj.weight"])
            h = self.rms_norm(x, w[p + "post_attention_layernorm.weight"], self.eps)
            x = x + F.linear(F.silu(F.linear(h, w[p + "mlp.gate_proj.weight"])) * F.linear(h, w[p + "mlp.up_proj.weight"]),
                             w[p + "mlp.down_proj.weight"])
        return self.rms_norm(x, w["model.norm.weight"], self.eps)


def pack_micro_batches(samples, budget):
    """trainer::pack_micro_batches (see the module docstring)."""
    order = sorted(samples, key=lambda s: len(s["tokens"]))
    groups, cur, cur_max = [], [], 0
    for s in order:
        n = len(s["tokens"]) - 1
        if cur and max(cur_max, n) * (len(cur) + 1) > budget:
            groups.append(cur)
            cur, cur_max = [], 0
        cur.append(s)
        cur_max = max(cur_max, n)
    if cur:
        groups.append(cur)
    out = []
    for grp in groups:
        T = max(len(s["tokens"]) - 1 for s in grp)
        B = len(grp)
        b = {"input_ids": torch.zeros(B, T, dtype=torch.long), "targets": torch.zeros(B, T, dtype=torch.long),
             "loss_mask": torch.zeros(B, T), "rollout_logp": torch.zeros(B, T), "advantages": torch.zeros(B, T),
             "temperature": torch.ones(B)}
        for i, s in enumerate(grp):
            n = len(s["tokens"]) - 1
            b["input_ids"][i, :n] = s["t_tokens"][:-1]
            b["targets"][i, :n] = s["t_tokens"][1:]
            b["loss_mask"][i, :n] = s["t_mask"][1:]
            b["rollout_logp"][i, :n] = s["t_logp"][1:]
            b["advantages"][i, :n] = s["advantage"]
            b["temperature"][i] = s["temperature"]
        b["positions"] = torch.arange(T).unsqueeze(0).expand(B, T).contiguous()
        out.append(b)
    return out


def sequence_logprobs(model, b):
    """trainer::sequence_logprobs with the entropy as a metric (no grad): ([B,T], [B,T]) float32."""
    hidden = model.forward(b["input_ids"], b["positions"])
    logits = torch.matmul(hidden, model.head.t()).to(torch.float32)
    B, T, V = logits.shape
    t0 = float(b["temperature"][0].item())
    uniform = bool((b["temperature"] == t0).all().item())
    temp = t0 if uniform else 1.0
    flat = (logits if uniform else logits / b["temperature"].view(B, 1, 1)).reshape(B * T, V)
    logp = torch.log_softmax(flat.to(torch.float32) / temp, -1).gather(-1, b["targets"].reshape(B * T, 1))
    logp = logp.squeeze(-1).view(B, T)
    with torch.no_grad():
        lsm = torch.log_softmax(flat.detach().to(torch.float32) / temp, -1)
        entropy = (-(lsm.exp() * lsm).sum(-1)).view(B, T)
    return logp, entropy


def aggregate(values, m, mode, normaliser):
    """trainer::aggregate_loss."""
    masked = torch.where(m > 0, values, torch.zeros_like(values)) * m
    if not normaliser > 0:
        return masked.sum() * 0.0
    if mode == "seq_mean_token_mean":
        return (masked.sum(1) / torch.clamp_min(m.sum(1), 1.0)).sum() / normaliser
    return masked.sum() / normaliser


def global_normaliser(mode, masks, max_len=0):
    """trainer::global_normaliser."""
    rows = sum(m.shape[0] for m in masks)
    if mode == "token_mean":
        return float(sum(m.double().sum().item() for m in masks))
    if mode == "dr_grpo":
        return float(rows * (max_len if max_len > 0 else max(m.shape[1] for m in masks)))
    return float(rows)


def policy_loss(logp, rollout_logp, adv, loss_mask, normaliser, a, entropy):
    """trainer::compute_policy_loss (no dual clip, no KL, entropy as a metric) -> (loss, metrics)."""
    keep = loss_mask.detach() > 0
    m = keep.to(torch.float32)
    zero = torch.zeros_like(logp)
    lp = torch.where(keep, logp, zero)
    old = torch.where(keep, logp.detach(), zero)
    roll = torch.where(keep, rollout_logp, zero)
    adv = torch.where(keep, adv, zero)
    count = m.sum().item()

    def masked_mean(x):
        return (x * m).sum().item() / count if count > 0 else 0.0

    ratio = torch.exp(torch.clamp(lp - old, -a.log_ratio_clamp, a.log_ratio_clamp))
    pg1 = -adv * ratio
    pg2 = -adv * torch.clamp(ratio, 1.0 - a.eps_low, 1.0 + a.eps_high)
    pg = torch.maximum(pg1, pg2)
    met = {"num_tokens": int(count)}
    with torch.no_grad():
        met["pg_clipfrac"] = masked_mean((pg2 > pg1).to(torch.float32))
        met["ppo_kl"] = masked_mean(old - lp)
        raw = torch.exp(old - roll)
        tis_w = torch.clamp(raw, a.tis_low, a.tis_cap)
        met["tis_clipfrac"] = masked_mean(((raw > a.tis_cap) | (raw < a.tis_low)).to(torch.float32))
        met["tis_mean"] = masked_mean(tis_w)
        met["rollout_logp_abs_diff"] = masked_mean(torch.abs(old - roll))
    loss = aggregate(pg * tis_w, m, a.agg_mode, normaliser)
    met["pg_loss"] = loss.item()
    ent = torch.where(keep, entropy.to(torch.float32), zero)
    met["entropy"] = aggregate(ent, m, a.agg_mode, normaliser).item()
    return loss, met


def train_step(model, opt, params, samples, a, phases):
    """One optimizer step; adds each phase's wall time to `phases`; returns the step's metrics."""
    t = time.perf_counter()

    def lap(name):
        nonlocal t
        now = time.perf_counter()
        phases[name] = phases.get(name, 0.0) + (now - t)
        t = now

    batches = pack_micro_batches(samples, a.micro_batch_tokens)
    normaliser = global_normaliser(a.agg_mode, [b["loss_mask"] for b in batches])
    opt.zero_grad(set_to_none=False)
    lap("pack")
    stats = {"pg_loss": 0.0, "entropy": 0.0, "num_tokens": 0}
    for b in batches:
        logp, entropy = sequence_logprobs(model, b)
        lap("forward")
        loss, met = policy_loss(logp, b["rollout_logp"], b["advantages"], b["loss_mask"], normaliser, a, entropy)
        lap("loss")
        loss.backward()
        lap("backward")
        stats["pg_loss"] += met["pg_loss"]
        stats["entropy"] += met["entropy"]
        stats["num_tokens"] += met["num_tokens"]
    stats["grad_norm"] = float(torch.nn.utils.clip_grad_norm_(
        [p for p in params if p.grad is not None], a.grad_clip if a.grad_clip > 0 else 1e30))
    lap("clip")
    opt.step()
    opt.zero_grad(set_to_none=False)
    lap("optimizer")
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--batch-file", required=True)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    # Defaults: trainer/config.h (optim.*, loss.*) with configs/games-tiny.yaml's optim.lr.
    ap.add_argument("--lr", type=float, default=2e-5)
    ap.add_argument("--beta1", type=float, default=0.9)
    ap.add_argument("--beta2", type=float, default=0.98)
    ap.add_argument("--adam-eps", type=float, default=1e-8)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--grad-clip", type=float, default=1.0)
    ap.add_argument("--eps-low", type=float, default=0.2)
    ap.add_argument("--eps-high", type=float, default=0.28)
    ap.add_argument("--tis-cap", type=float, default=2.0)
    ap.add_argument("--tis-low", type=float, default=0.0)
    ap.add_argument("--log-ratio-clamp", type=float, default=20.0)
    ap.add_argument("--agg-mode", default="seq_mean_token_mean",
                    choices=["token_mean", "seq_mean_token_mean", "seq_mean_token_sum", "dr_grpo"])
    ap.add_argument("--micro-batch-tokens", type=int, default=8192)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    model = Model(a.checkpoint)
    params = model.parameters()
    samples = json.load(open(a.batch_file))["samples"]
    for s in samples:  # per-sample tensors, as the C++ Sample vectors (packing them is timed)
        s["t_tokens"] = torch.tensor(s["tokens"], dtype=torch.long)
        s["t_mask"] = torch.tensor(s["loss_mask"], dtype=torch.float32)
        s["t_logp"] = torch.tensor(s["rollout_logprobs"], dtype=torch.float32)
    opt = torch.optim.AdamW(params, lr=a.lr, betas=(a.beta1, a.beta2), eps=a.adam_eps,
                            weight_decay=a.weight_decay, foreach=False)
    reset_peak_rss()
    step_s, step_cpu_s, phases, first = [], [], {}, None
    for i in range(a.warmup + a.steps):
        ph = {}
        t0, c0 = time.perf_counter(), time.process_time()
        stats = train_step(model, opt, params, samples, a, ph)
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        if first is None:
            first = stats
        if i >= a.warmup:
            step_s.append(dt)
            step_cpu_s.append(dc)
            for k, v in ph.items():
                phases[k] = phases.get(k, 0.0) + v / a.steps
    print(json.dumps({"step_s": step_s, "step_cpu_s": step_cpu_s, "first": first, "peak_rss_mb": peak_rss_mb(), "phases_s": phases,
                      "threads": torch.get_num_threads(), "torch": torch.__version__}))


if __name__ == "__main__":
    main()
