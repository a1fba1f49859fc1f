#!/usr/bin/env python3
"""gpux proof-of-hardware challenge on NVIDIA GPUs with PyTorch (issue 12).

The agent (packages/agent/src/challenge/nvidia-torch.ts) starts this script, on the host's python3 or in a
container, and speaks JSON lines over stdin/stdout:
  in:  {"type": "run", "assignment": {...ChallengeAssignment}, "receivedAt": ms}
  out: {"type": "digests", "gpus": [{"index", "digests", "computeMs", "totalMs"}]}
  in:  {"type": "reveal", "items": [{"gpu", "product", "block"}]}
  out: {"type": "blocks", "blocks": [{"gpu", "product", "block", "data", "proof"}]}
  in:  {"type": "exit"}   (or EOF)
Errors: {"type": "error", "message"} and exit code 1. Progress and warnings go to stderr.

The matrices are the ones of core challenge/matrices.ts, bit for bit: a 32-bit multiply/xor-shift hash with
multipliers below 2^31, so int64 tensor arithmetic never overflows. Entries are integers in [-3, 3], so the
float32 products are exact (|C| <= 9n < 2^24) -- provided nothing rounds: TF32 is switched off below.
Products stay resident on their GPU until the reveal; digests hash row blocks copied to the host
(sha256(0x00 || block int32 LE) leaves, sha256(0x01 || left || right) nodes, odd nodes carried up).

GPUX_CHALLENGE_BACKEND=numpy runs the same code on the CPU with numpy (tests on machines without torch).
"""
import base64
import hashlib
import json
import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

M32 = 0xFFFFFFFF


def mix32(x):
    """Low-bias 32-bit mixer; x is a python int or an int64 array/tensor holding values in [0, 2^32)."""
    x = x ^ (x >> 16)
    x = (x * 0x21F0AAAD) & M32
    x = x ^ (x >> 15)
    x = (x * 0x735A2D97) & M32
    x = x ^ (x >> 15)
    return x


def matrix_key(seed_hex, gpu, product, which):
    k = 0x9E3779B9
    for w in range(8):
        k = mix32(k ^ int(seed_hex[w * 8 : w * 8 + 8], 16))
    k = mix32(k ^ gpu)
    k = mix32(k ^ product)
    k = mix32(k ^ (1 if which == "A" else 2))
    return k, mix32(k ^ 0x5BD1E995)


def entries(idx, k1, k2):
    """Entries at flat indices idx (int64, < 2^32) of the matrix keyed (k1, k2): integers in [-3, 3]."""
    h = mix32(idx ^ k1)
    h = mix32((h + k2) & M32)
    return h % 7 - 3


def leaf_hash(block):
    """block: a C-contiguous int32 little-endian buffer (bytes or a numpy row slice)."""
    h = hashlib.sha256(b"\x00")
    h.update(memoryview(block))
    return h.hexdigest()


def node_hash(left, right):
    return hashlib.sha256(b"\x01" + bytes.fromhex(left) + bytes.fromhex(right)).hexdigest()


def merkle_layers(leaves):
    layers = [list(leaves)]
    while len(layers[-1]) > 1:
        level = layers[-1]
        layers.append([node_hash(level[i], level[i + 1]) if i + 1 < len(level) else level[i] for i in range(0, len(level), 2)])
    return layers


def merkle_path(layers, index):
    path = []
    for level in layers[:-1]:
        sibling = index ^ 1
        if sibling < len(level):
            path.append(level[sibling])
        index >>= 1
    return path


class TorchBackend:
    name = "nvidia-torch"

    def __init__(self):
        import torch

        self.torch = torch
        # Exactness: plain float32 everywhere, no TF32 or reduced-precision reductions.
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
        torch.set_float32_matmul_precision("highest")
        if not torch.cuda.is_available():
            raise RuntimeError("PyTorch sees no CUDA device")

    def device(self, gpu):
        return self.torch.device("cuda", gpu)

    def generate(self, dev, n, k1, k2):
        t = self.torch
        out = t.empty((n, n), dtype=t.float32, device=dev)
        rows = max(1, (1 << 24) // n)  # chunks of ~16M entries keep the int64 temporaries small
        for r in range(0, n, rows):
            count = min(rows, n - r)
            idx = t.arange(r * n, (r + count) * n, dtype=t.int64, device=dev)
            out[r : r + count] = entries(idx, k1, k2).view(count, n).to(t.float32)
        return out

    def matmul_int(self, a, b):
        return self.torch.matmul(a, b).to(self.torch.int32)

    def sync(self, dev):
        self.torch.cuda.synchronize(dev)

    def to_host(self, c):
        return c.cpu().numpy().astype("<i4", copy=False)

    def check_devices(self, gpus):
        count = self.torch.cuda.device_count()
        for g in gpus:
            if g >= count:
                raise RuntimeError(f"GPU {g} is not visible to PyTorch ({count} devices; CUDA_DEVICE_ORDER=PCI_BUS_ID)")


class NumpyBackend:
    """The same steps on the CPU (tests only: no GPU, no torch)."""

    name = "numpy"

    def __init__(self):
        import numpy

        self.np = numpy

    def device(self, gpu):
        return gpu

    def generate(self, dev, n, k1, k2):
        np = self.np
        return entries(np.arange(n * n, dtype=np.int64), k1, k2).reshape(n, n).astype(np.float32)

    def matmul_int(self, a, b):
        return (a @ b).astype(self.np.int32)

    def sync(self, dev):
        pass

    def to_host(self, c):
        return c.astype("<i4", copy=False)

    def check_devices(self, gpus):
        pass


def compute_gpu(backend, a, gpu, barrier, results):
    """Every product of one GPU, resident; computeMs from the first generation to the last product done."""
    dev = backend.device(gpu)
    n, seed = a["n"], a["seed"]
    barrier.wait()  # all GPUs start together: one GPU cannot answer for several claims
    began = time.perf_counter()
    products = []
    for p in range(a["products"]):
        ka, kb = matrix_key(seed, gpu, p, "A"), matrix_key(seed, gpu, p, "B")
        products.append(backend.matmul_int(backend.generate(dev, n, *ka), backend.generate(dev, n, *kb)))
    backend.sync(dev)
    results[gpu] = (products, (time.perf_counter() - began) * 1000.0)


def digest_product(backend, c, n, row_block):
    host = backend.to_host(c)  # one copy to the host per product, then hash its row blocks
    return merkle_layers([leaf_hash(host[r : min(n, r + row_block)]) for r in range(0, n, row_block)])


def main():
    backend = NumpyBackend() if os.environ.get("GPUX_CHALLENGE_BACKEND") == "numpy" else TorchBackend()
    state = {}
    out = sys.stdout
    for line in sys.stdin:
        msg = json.loads(line)
        if msg["type"] == "run":
            a = msg["assignment"]
            received = time.time() * 1000.0
            gpus = a["gpuIndices"] or [0]
            backend.check_devices(gpus)
            barrier = threading.Barrier(len(gpus))
            results = {}
            errors = []

            def work(g):
                try:
                    compute_gpu(backend, a, g, barrier, results)
                except BaseException as e:  # noqa: BLE001 - reported to the agent
                    errors.append(f"GPU {g}: {e}")
                    barrier.abort()

            threads = [threading.Thread(target=work, args=(g,)) for g in gpus]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            if errors:
                raise RuntimeError("; ".join(errors))
            # sha256 releases the GIL on large buffers: hash products in parallel.
            with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as pool:  # each holds one product on the host
                jobs = {(g, p): pool.submit(digest_product, backend, c, a["n"], a["rowBlock"]) for g in gpus for p, c in enumerate(results[g][0])}
                layers = {k: f.result() for k, f in jobs.items()}
            total = time.time() * 1000.0 - received
            state = {"a": a, "products": {g: results[g][0] for g in gpus}, "layers": layers}
            gpus_out = [{"index": g, "digests": [layers[(g, p)][-1][0] for p in range(a["products"])], "computeMs": results[g][1], "totalMs": total} for g in gpus]
            out.write(json.dumps({"type": "digests", "runner": backend.name, "gpus": gpus_out}) + "\n")
            out.flush()
        elif msg["type"] == "reveal":
            a = state["a"]
            n, rb = a["n"], a["rowBlock"]
            blocks = []
            for it in msg["items"]:
                g, p, b = it["gpu"], it["product"], it["block"]
                c = state["products"][g][p]
                data = backend.to_host(c[b * rb : min(n, (b + 1) * rb)]).tobytes()
                blocks.append({"gpu": g, "product": p, "block": b, "data": base64.b64encode(data).decode("ascii"), "proof": merkle_path(state["layers"][(g, p)], b)})
            out.write(json.dumps({"type": "blocks", "blocks": blocks}) + "\n")
            out.flush()
        elif msg["type"] == "exit":
            return 0
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except Exception as e:  # noqa: BLE001 - one line for the agent's log
        sys.stdout.write(json.dumps({"type": "error", "message": f"{type(e).__name__}: {e}"}) + "\n")
        sys.stdout.flush()
        sys.exit(1)
