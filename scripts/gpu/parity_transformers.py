#!/usr/bin/env python3
"""Parity of our forward (`spade score`) with Hugging Face transformers' own (issue 4), run by
scripts/gpu/run_all.sh (phase parity):

  parity_transformers.py SPADE_BINARY [--tolerance 1e-3] [--bf16-tolerance 0.05]

For each case (llama with llama3 RoPE scaling, qwen2 with q/k/v biases and tied embeddings, qwen3
with q/k norms and an explicit head_dim, qwen3_moe with 4 experts / top-2 / normalised top-k
probabilities and layer 1 dense via mlp_only_layers, and qwen3_bf16: the qwen3 model saved by
transformers in bfloat16): a tiny random model built and saved by transformers (weights perturbed by
N(0, 0.2) so norms and biases are not trivial), scored on the same 20 ids by transformers and by
`spade score --ids ... --json`: max abs difference of the per-token logprobs (temperature 1) and of
the last position's top-20 logits.

`spade score` computes in float32 whatever the stored dtype. So the bf16 case is judged against
transformers computing in float32 on the same bf16-rounded weights (a loading check, --tolerance),
and additionally against transformers computing in bfloat16 itself, where rounding of every
activation to 8 mantissa bits (unit roundoff 2^-8 ~ 0.004) accumulates over the layers: that
difference must stay within --bf16-tolerance x max(1, max |logit|).

Prints one JSON object {"transformers", "tolerance", "bf16_tolerance", "results": [...], "ok"}; exit
status 0 when every difference is within its tolerance, 1 otherwise. If transformers cannot be
imported: prints {"skipped": "<reason>"} and exits 0. A case whose config class this transformers
lacks (Qwen3MoeConfig before 4.51) is reported with an error and fails.

RoPE keywords: transformers 5 takes `rope_parameters` (rope_theta inside it) where 4.x took
`rope_theta` and `rope_scaling`; both spell the same rotary embedding.
"""
import argparse
import json
import re
import subprocess
import sys
import tempfile


def rope_kwargs(version, theta, scaling=None):
    major = int(re.findall(r"\d+", version)[0])
    if major >= 5:
        return {"rope_parameters": dict(scaling or {"rope_type": "default"}, rope_theta=theta)}
    return {"rope_theta": theta, "rope_scaling": scaling}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("spade")
    ap.add_argument("--tolerance", type=float, default=1e-3)
    ap.add_argument("--bf16-tolerance", type=float, default=0.05)
    a = ap.parse_args()
    try:
        import torch
        import transformers
    except Exception as e:
        print(json.dumps({"skipped": f"cannot import transformers: {type(e).__name__}: {e}"}))
        return 0
    v = transformers.__version__
    ids = [1, 5, 9, 33, 2, 96, 40, 41, 42, 7, 7, 7, 0, 13, 64, 80, 3, 5, 11, 70]
    common = dict(vocab_size=97, hidden_size=48, intermediate_size=80, num_hidden_layers=2, num_attention_heads=6,
                  num_key_value_heads=2, rms_norm_eps=1e-6, max_position_embeddings=256)
    llama3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
              "original_max_position_embeddings": 64}
    qwen3 = lambda: transformers.Qwen3Config(**common, **rope_kwargs(v, 1e6), head_dim=16, tie_word_embeddings=False)
    # (family, make config, stored dtype)
    cases = {
        "llama": (lambda: transformers.LlamaConfig(**common, **rope_kwargs(v, 500000.0, llama3),
                                                   tie_word_embeddings=False), torch.float32),
        "qwen2": (lambda: transformers.Qwen2Config(**common, **rope_kwargs(v, 1e6), tie_word_embeddings=True),
                  torch.float32),
        "qwen3": (qwen3, torch.float32),
        "qwen3_moe": (lambda: transformers.Qwen3MoeConfig(
            **common, **rope_kwargs(v, 1e6), head_dim=16, tie_word_embeddings=False, num_experts=4,
            num_experts_per_tok=2, moe_intermediate_size=32, norm_topk_prob=True, decoder_sparse_step=1,
            mlp_only_layers=[1]), torch.float32),
        "qwen3_bf16": (qwen3, torch.bfloat16),
    }
    report = {"transformers": v, "torch": torch.__version__, "tolerance": a.tolerance,
              "bf16_tolerance": a.bf16_tolerance, "results": []}
    ok = True
    tokens = torch.tensor([ids])

    def diffs(logits, ours):
        """Max abs differences of spade's logprobs / last top-k logits from `logits` [T, V]."""
        logits = logits.float()
        lp = torch.log_softmax(logits[:-1], -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).squeeze(-1)
        ours_lp = torch.tensor(ours["logprobs"][1:])
        return ((ours_lp - lp).abs().max().item(),
                max(abs(logits[-1, i].item() - x) for i, x in ours["last_top"]))

    for name, (make, dtype) in cases.items():
        row = {"family": name, "dtype": str(dtype).replace("torch.", "")}
        try:
            torch.manual_seed(0)
            model = transformers.AutoModelForCausalLM.from_config(make()).float().eval()
            with torch.no_grad():
                for _, p in model.named_parameters():
                    p.add_(torch.randn_like(p) * 0.2)  # non-trivial norms/biases, larger weights
            model = model.to(dtype)  # the weights as stored (bf16-rounded for the bf16 case)
            d = tempfile.mkdtemp(prefix=f"parity_{name}_")
            model.save_pretrained(d)
            ours = json.loads(subprocess.check_output(
                [a.spade, "score", "--checkpoint", d, "--ids", ",".join(map(str, ids)), "--json"]))
            # float32 compute on the stored weights, in a model built in float32: model.float() on the
            # bf16 module would also upcast its bf16-rounded non-persistent buffers (the RoPE inv_freq),
            # which no checkpoint holds (transformers 5.17 on the H200: 1.5e-3 of logprob from that alone).
            ref_model = transformers.AutoModelForCausalLM.from_config(make()).float().eval()
            ref_model.load_state_dict({k: t.float() for k, t in model.state_dict().items()})
            with torch.no_grad():
                ref = ref_model(tokens).logits[0].float()
            row["max_abs_logprob_diff"], row["max_abs_top20_logit_diff"] = diffs(ref, ours)
            row["max_abs_logit"] = ref.abs().max().item()
            row["ok"] = max(row["max_abs_logprob_diff"], row["max_abs_top20_logit_diff"]) <= a.tolerance
            if dtype == torch.bfloat16:  # transformers computing in bf16 itself
                with torch.no_grad():
                    ref16 = model.to(torch.bfloat16)(tokens).logits[0].float()
                lp16, top16 = diffs(ref16, ours)
                row["bf16_compute_max_abs_logprob_diff"] = lp16
                row["bf16_compute_max_abs_top20_logit_diff"] = top16
                limit = a.bf16_tolerance * max(1.0, row["max_abs_logit"])
                row["bf16_compute_limit"] = limit
                row["ok"] = row["ok"] and max(lp16, top16) <= limit
        except Exception as e:  # one family failing does not hide the others' numbers
            row["error"] = f"{type(e).__name__}: {e}"
            row["ok"] = False
        ok = ok and row["ok"]
        report["results"].append(row)
    report["ok"] = ok
    print(json.dumps(report))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
