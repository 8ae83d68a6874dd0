#!/usr/bin/python3
"""Baseline for `spade bench sampler --baseline hf` (issue 4): Hugging Face transformers'
model.generate on the same checkpoint directory the bench wrote (our saved layout is HF's), same
prompts, same sampling, same device and dtype.

  sampler_hf.py --checkpoint DIR --batch B --prompt P --new N [--threads T] [--device D] [--dtype DT]

Prompts: B sequences of P ids, id[i][t] = (i * 131 + t * 17) % vocab (as the C++ side and
sampler_ref.py), attention mask all ones (no padding). Sampling: do_sample, temperature 0.6, top-k 20,
top-p 0.95 (SPADE defaults), max_new_tokens = min_new_tokens = N, so every row makes exactly N
tokens (the checkpoint has no eos token either). One untimed warm-up generate of 4 new tokens on the
same batch first; the timed generate is bracketed by device synchronisation. The prefill time is taken
at the first call of a pass-through logits processor (after the prompt's forward, device-synchronised).

Prints one JSON line with sampler_ref.py's keys {"tokens", "seconds", "prefill_s", "decode_s",
"tokens_per_s", "threads"} plus "transformers", "torch", "attn_implementation" and
"peak_gpu_allocated_mb" (torch.cuda.max_memory_allocated over the timed generate; null off CUDA).
If torch or transformers cannot be imported, prints {"skipped": "<reason>"} and exits 0: the bench
then records this baseline as skipped, without a ratio.
"""
import argparse
import json
import re
import time


def dtype_keyword(version):
    """from_pretrained's dtype keyword: `dtype` from transformers 4.56 on (`torch_dtype` deprecated
    there), `torch_dtype` before. An unknown keyword would be stored on the config and silently
    ignored, so the loaded dtype is checked after loading as well."""
    major, minor = (int(x) for x in re.findall(r"\d+", version)[:2])
    return "dtype" if (major, minor) >= (4, 56) else "torch_dtype"


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
    try:
        import torch
        import transformers
    except Exception as e:  # ImportError, or a broken install failing inside its own imports
        print(json.dumps({"skipped": f"cannot import transformers: {type(e).__name__}: {e}"}))
        return
    from transformers.generation import LogitsProcessor, LogitsProcessorList  # failing here is an error
    torch.set_num_threads(a.threads)
    torch.set_grad_enabled(False)
    dev, dt = torch.device(a.device), getattr(torch, a.dtype)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        a.checkpoint, **{dtype_keyword(transformers.__version__): dt}).to(dev).eval()
    if model.dtype != dt:
        raise SystemExit(f"sampler_hf.py: loaded {model.dtype}, asked for {dt}")
    vocab = model.config.vocab_size
    ids = torch.tensor([[(i * 131 + t * 17) % vocab for t in range(a.prompt)] for i in range(a.batch)], device=dev)
    mask = torch.ones_like(ids)
    cuda = dev.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    class FirstCall(LogitsProcessor):
        """Records the (synchronised) time of its first call: the prompt's forward is done."""
        def __init__(self):
            self.t = None

        def __call__(self, input_ids, scores):
            if self.t is None:
                sync()
                self.t = time.perf_counter()
            return scores

    def generate(n, first_call):
        return model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=0.6, top_k=20,
                              top_p=0.95, max_new_tokens=n, min_new_tokens=n,
                              logits_processor=LogitsProcessorList([first_call]))

    torch.manual_seed(0)
    generate(min(4, a.new), FirstCall())
    sync()
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
    first = FirstCall()
    t0 = time.perf_counter()
    out = generate(a.new, first)
    sync()
    t2 = time.perf_counter()
    made = out.shape[1] - a.prompt
    if made != a.new or out.shape[0] != a.batch:
        raise SystemExit(f"sampler_hf.py: generate returned {tuple(out.shape)}, expected ({a.batch}, {a.prompt + a.new})")
    n = a.batch * made
    print(json.dumps({"tokens": n, "seconds": t2 - t0, "prefill_s": first.t - t0, "decode_s": t2 - first.t,
                      "tokens_per_s": n / (t2 - t0), "threads": torch.get_num_threads(),
                      "transformers": transformers.__version__, "torch": torch.__version__,
                      "attn_implementation": getattr(model.config, "_attn_implementation", None),
                      "peak_gpu_allocated_mb": torch.cuda.max_memory_allocated(dev) / 2**20 if cuda else None}))


if __name__ == "__main__":
    main()
