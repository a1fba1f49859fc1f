"""Train a small MLP on synthetic regression data on one GPU, checkpointing so a retry on another node resumes.

gpux gives the job: $GPUX_INPUTS (this script), $GPUX_OUTPUTS (what comes back), $GPUX_CHECKPOINTS (uploaded every
checkpoint.everySeconds and restored on a retry) and CUDA_VISIBLE_DEVICES (only the assigned GPU).
Outputs: model.pt (state_dict), model.json (the weights as lists, what the batch-inference example reads), metrics.json.
"""
import json
import os
import time

import torch
from torch import nn

STEPS = int(os.environ.get("STEPS", "3000"))
BATCH = int(os.environ.get("BATCH", "4096"))
INPUTS, HIDDEN = 8, 32
out_dir = os.environ["GPUX_OUTPUTS"]
ckpt_dir = os.environ.get("GPUX_CHECKPOINTS")
ckpt_path = os.path.join(ckpt_dir, "state.pt") if ckpt_dir else None

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(f"device: {torch.cuda.get_device_name(0) if device.type == 'cuda' else 'cpu (no GPU visible)'}, torch {torch.__version__}", flush=True)
torch.manual_seed(0)

# The function to learn: a fixed random nonlinear map of 8 features, plus noise.
true_w = torch.randn(INPUTS, device=device)


def batch(n):
    x = torch.rand(n, INPUTS, device=device) * 2 - 1
    y = torch.sin(x @ true_w) + 0.1 * (x**2).sum(dim=1) + 0.01 * torch.randn(n, device=device)
    return x, y.unsqueeze(1)


model = nn.Sequential(nn.Linear(INPUTS, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 1)).to(device)
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
start = 0
if ckpt_path and os.path.exists(ckpt_path):
    state = torch.load(ckpt_path, map_location=device)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"]
    print(f"resumed from the checkpoint at step {start}", flush=True)

t0 = time.time()
loss = torch.tensor(float("nan"))
for step in range(start, STEPS):
    x, y = batch(BATCH)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if (step + 1) % 500 == 0:
        print(f"step {step + 1}/{STEPS} loss {loss.item():.5f}", flush=True)
        if ckpt_path:
            # Write then rename, so an upload never sees half a file.
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}, ckpt_path + ".tmp")
            os.replace(ckpt_path + ".tmp", ckpt_path)

x, y = batch(65536)
with torch.no_grad():
    test_loss = nn.functional.mse_loss(model(x), y).item()
torch.save(model.state_dict(), os.path.join(out_dir, "model.pt"))
layers = [m for m in model if isinstance(m, nn.Linear)]
with open(os.path.join(out_dir, "model.json"), "w") as f:
    json.dump({"format": "gpux-example-mlp/1", "inputs": INPUTS, "hidden": HIDDEN,
               "layers": [{"weight": m.weight.tolist(), "bias": m.bias.tolist()} for m in layers]}, f)
with open(os.path.join(out_dir, "metrics.json"), "w") as f:
    json.dump({"steps": STEPS, "resumedAt": start, "trainLoss": loss.item(), "testLoss": test_loss,
               "seconds": round(time.time() - t0, 3), "device": str(device)}, f, indent=2)
print(f"done: test loss {test_loss:.5f}; wrote model.pt, model.json, metrics.json", flush=True)
