"""Batch inference: read a model and a CSV of inputs from $GPUX_INPUTS, write predictions.csv to $GPUX_OUTPUTS.

model.json is the layout the pytorch-train example writes (Linear → ReLU → Linear, weights as lists); inputs.csv has
an id column and one column per feature. Rows go through the GPU in batches of $BATCH.
"""
import csv
import json
import os

import torch
from torch import nn

BATCH = int(os.environ.get("BATCH", "1024"))
inp, out = os.environ["GPUX_INPUTS"], os.environ["GPUX_OUTPUTS"]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

with open(os.path.join(inp, "model.json")) as f:
    spec = json.load(f)
first, second = spec["layers"]
model = nn.Sequential(nn.Linear(spec["inputs"], spec["hidden"]), nn.ReLU(), nn.Linear(spec["hidden"], 1))
with torch.no_grad():
    for layer, w in ((model[0], first), (model[2], second)):
        layer.weight.copy_(torch.tensor(w["weight"]))
        layer.bias.copy_(torch.tensor(w["bias"]))
model = model.to(device).eval()

with open(os.path.join(inp, "inputs.csv"), newline="") as f:
    rows = list(csv.reader(f))
header, rows = rows[0], rows[1:]
ids = [r[0] for r in rows]
features = torch.tensor([[float(v) for v in r[1:]] for r in rows])
if features.shape[1] != spec["inputs"]:
    raise SystemExit(f"inputs.csv has {features.shape[1]} feature columns; the model takes {spec['inputs']}")

preds = []
with torch.inference_mode():
    for i in range(0, len(rows), BATCH):
        preds.append(model(features[i:i + BATCH].to(device)).squeeze(1).cpu())
preds = torch.cat(preds).tolist() if preds else []

with open(os.path.join(out, "predictions.csv"), "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["id", "prediction"])
    for i, p in zip(ids, preds):
        w.writerow([i, f"{p:.6f}"])
print(f"{len(preds)} predictions on {device} in batches of {BATCH}; wrote predictions.csv", flush=True)
