"""Greedy autoregressive decoding with per-step bookkeeping that reads the GPU every step."""

import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def decode(embed, proj, prompt, max_new: int = 32, eos: int = 1):
    tokens = prompt.to(device)
    for step in range(max_new):
        h = embed(tokens).mean(dim=1)
        logits = proj(h)
        next_tok = logits.argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, next_tok], dim=1)
        position = torch.tensor(step, device=device)
        score = logits.max().item()
        if score > 1e4:
            print(f"step {step} overflow {score}")
        if (next_tok == eos).all():
            break
    return tokens, position


def main() -> None:
    torch.manual_seed(0)
    vocab, dim = 1000, 256
    embed = torch.nn.Embedding(vocab, dim).to(device)
    proj = torch.nn.Linear(dim, vocab).to(device)
    prompt = torch.randint(2, vocab, (8, 16))
    tokens, position = decode(embed, proj, prompt)
    print("tokens", tokens.sum().item(), "last position", int(position))


if __name__ == "__main__":
    main()
