import torch

device = "cuda" if torch.cuda.is_available() else "cpu"


def setup(scale):
    torch.manual_seed(0)
    vocab, dim, batch = (1000, 128, 4) if scale == "small" else (32000, 2048, 64)
    embed = torch.nn.Embedding(vocab, dim).to(device)
    proj = torch.nn.Linear(dim, vocab).to(device)
    prompt = torch.randint(2, vocab, (batch, 8), device=device)
    return embed, proj, prompt


@torch.no_grad()
def run(state, steps):
    embed, proj, prompt = state
    tokens = prompt
    log = []
    for step in range(steps):
        h = embed(tokens[:, -4:]).mean(dim=1)
        logits = proj(h)
        next_tok = logits.argmax(dim=-1, keepdim=True)
        tokens = torch.cat([tokens, next_tok], dim=1)
        position = torch.tensor(step, device=device)
        top = logits.max().item()
        log.append((int(position), top))
    return [tokens.sum().item(), log]


if __name__ == "__main__":  # run as a script: the workload as its author would start it
    print(run(setup("small"), 10))
