"""DistributedDataParallel across a gpux gang, started by torchrun on every member.

gpux sets, on each member of a gang job (spec nodes > 1): GPUX_RANK (0-based, the node's rank), GPUX_WORLD_SIZE (the
number of nodes), GPUX_PEERS (every member's address in rank order, comma-separated) and GPUX_MASTER_ADDR (rank 0's).
torchrun turns them into RANK / WORLD_SIZE / LOCAL_RANK for its processes (one per GPU).
Each member writes its own outputs (rank-N.json); rank 0 also writes model.pt.
"""
import json
import os
import time

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP

peers = os.environ["GPUX_PEERS"].split(",")
node_rank, nodes = int(os.environ["GPUX_RANK"]), int(os.environ["GPUX_WORLD_SIZE"])
assert len(peers) == nodes, f"GPUX_PEERS names {len(peers)} members, GPUX_WORLD_SIZE says {nodes}"

dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
rank, world, local = dist.get_rank(), dist.get_world_size(), int(os.environ["LOCAL_RANK"])
device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")
if device.type == "cuda":
    torch.cuda.set_device(device)
print(f"rank {rank}/{world} on node {node_rank}/{nodes} ({peers[node_rank]}), device {device}; peers: {', '.join(peers)}", flush=True)

# Every process checks that the collective sees all of them: the sum of ranks is world·(world−1)/2.
total = torch.tensor([float(rank)], device=device)
dist.all_reduce(total)
assert int(total.item()) == world * (world - 1) // 2, f"all_reduce gave {total.item()}"

torch.manual_seed(1234 + rank)  # each rank draws its own shard of synthetic data
model = DDP(nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 1)).to(device), device_ids=[local] if device.type == "cuda" else None)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
w_true = torch.linspace(-1, 1, 64, device=device)
t0 = time.time()
for step in range(int(os.environ.get("STEPS", "500"))):
    x = torch.randn(1024, 64, device=device)
    y = (x @ w_true).unsqueeze(1)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad()
    loss.backward()  # DDP averages the gradients over every rank here
    opt.step()
    if rank == 0 and (step + 1) % 100 == 0:
        print(f"step {step + 1} loss {loss.item():.5f}", flush=True)

out = os.environ["GPUX_OUTPUTS"]
with open(os.path.join(out, f"rank-{rank}.json"), "w") as f:
    json.dump({"rank": rank, "world": world, "node": node_rank, "peers": peers, "loss": loss.item(), "seconds": round(time.time() - t0, 3)}, f)
if rank == 0:
    torch.save(model.module.state_dict(), os.path.join(out, "model.pt"))
dist.destroy_process_group()
