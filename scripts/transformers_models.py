"""Small Hugging Face transformers models through torch.compile, Inductor emitting Triton for
this backend, against the same model run eagerly.

    pip install transformers            # not a test dependency
    python scripts/transformers_models.py [--models gpt2,bert,...] [--dtypes float32,bfloat16]

Each model is built from a small config with random weights (nothing is downloaded): 2
layers, hidden size 128, sequences of 64 tokens (T5: 32 in, 16 out; ViT: 64 x 64 images).
Inference in each dtype compares the first output (logits or last hidden state) with eager
mode within 1e-3 (float32) or 5e-2 (bfloat16) of its largest magnitude; training (float32,
dropout off, GPT-2 and Llama) compares the loss and every parameter's gradient (1e-3 of its
largest magnitude). Exits non-zero on a mismatch. Set TRITON_CACHE_DIR and
TORCHINDUCTOR_CACHE_DIR to measure cold compiles.
"""
import argparse
import copy
import sys
import time

MODELS = ("gpt2", "bert", "llama", "mistral", "t5", "vit")
TRAINED = ("gpt2", "llama")


def build(name, T, torch):
    """(model, inputs) with dropout off."""
    ids = torch.randint(0, 1000, (2, 64))
    small = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=4, intermediate_size=256)
    text = dict(small, vocab_size=1000)
    if name == "gpt2":
        config = T.GPT2Config(n_layer=2, n_embd=128, n_head=4, vocab_size=1000, n_positions=128, resid_pdrop=0,
                              embd_pdrop=0, attn_pdrop=0)
        return T.GPT2LMHeadModel(config), {"input_ids": ids}
    if name == "bert":
        config = T.BertConfig(**text, hidden_dropout_prob=0, attention_probs_dropout_prob=0)
        return T.BertModel(config), {"input_ids": ids, "attention_mask": torch.ones_like(ids)}
    if name == "llama":
        return T.LlamaForCausalLM(T.LlamaConfig(**text, num_key_value_heads=2)), {"input_ids": ids}
    if name == "mistral":
        config = T.MistralConfig(**text, num_key_value_heads=2, sliding_window=32)
        return T.MistralForCausalLM(config), {"input_ids": ids}
    if name == "t5":
        config = T.T5Config(num_layers=2, d_model=128, num_heads=4, d_kv=32, d_ff=256, vocab_size=1000,
                            dropout_rate=0)
        return T.T5Model(config), {"input_ids": ids[:, :32], "decoder_input_ids": ids[:, 32:48]}
    if name == "vit":
        config = T.ViTConfig(**small, image_size=64, patch_size=16, hidden_dropout_prob=0,
                             attention_probs_dropout_prob=0)
        return T.ViTModel(config), {"pixel_values": torch.randn(2, 3, 64, 64)}
    raise ValueError(f"unknown model {name!r}; one of {', '.join(MODELS)}")


def first_output(out):
    if getattr(out, "logits", None) is not None:
        return out.logits
    return out.last_hidden_state


def inference(name, dtype, T, torch):
    model, inputs = build(name, T, torch)
    model = model.to(dtype).eval()
    inputs = {k: v.to(dtype) if v.is_floating_point() else v for k, v in inputs.items()}
    with torch.no_grad():
        ref = first_output(model(**inputs)).float()
        t = time.perf_counter()
        got = first_output(torch.compile(model)(**inputs)).float()
        seconds = time.perf_counter() - t
    err, scale = (ref - got).abs().max().item(), ref.abs().max().item()
    ok = err <= (1e-3 if dtype == torch.float32 else 5e-2) * max(1.0, scale)
    return ok, f"max |difference| {err:.2e} (largest |value| {scale:.2f}), compile and first run {seconds:.1f} s"


def training(name, T, torch):
    model, inputs = build(name, T, torch)
    compiled_copy = copy.deepcopy(model)
    model.train()
    compiled_copy.train()
    loss = model(**inputs, labels=inputs["input_ids"]).loss
    loss.backward()
    loss2 = torch.compile(compiled_copy)(**inputs, labels=inputs["input_ids"]).loss
    loss2.backward()
    worst = max(((p.grad - q.grad).abs().max() / (p.grad.abs().max() + 1e-12)).item()
                for p, q in zip(model.parameters(), compiled_copy.parameters()))
    ok = abs(loss.item() - loss2.item()) <= 1e-4 * max(1.0, abs(loss.item())) and worst <= 1e-3
    return ok, f"loss {loss.item():.6f} against {loss2.item():.6f}, largest relative gradient difference {worst:.2e}"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--dtypes", default="float32,bfloat16")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    import torch
    import torch._inductor.config as inductor_config
    import transformers as T
    T.logging.set_verbosity_error()
    inductor_config.cpu_backend = "triton"
    torch.set_num_threads(args.threads)
    failed = 0
    for name in args.models.split(","):
        for dtype in args.dtypes.split(","):
            torch.manual_seed(0)
            ok, detail = inference(name, getattr(torch, dtype), T, torch)
            failed += not ok
            print(f"{name:<8} {dtype:<9} inference  {'ok  ' if ok else 'FAIL'}  {detail}", flush=True)
        if name in TRAINED:
            torch.manual_seed(0)
            ok, detail = training(name, T, torch)
            failed += not ok
            print(f"{name:<8} {'float32':<9} training   {'ok  ' if ok else 'FAIL'}  {detail}", flush=True)
    print(f"{failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
