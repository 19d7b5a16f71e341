#!/usr/bin/env python3
"""ultralytics YOLO26 in PyTorch on the same GPU, timed like `yolo26 bench` (issue 18's side-by-side reference).

    python3 torch_bench.py --model n --batch 1,16,64 --imgsz 640 [--warmup 10 --runs 100] [--train] [--configs ...]

Inference (default): DetectionModel(yolo26{model}.yaml, nc=80, random init), end2end one-to-one head,
`model.fuse()` (BatchNorm folded, one-to-many branch dropped), eval, no grad: ultralytics' predictor's network with
nms=False; output (B, 300, 6). Input: a fixed random (B, 3, imgsz, imgsz) tensor. Configurations (--configs):
  fp32        TF32 off for cuDNN and matmul (exact f32, what `yolo26 bench` computes)
  tf32        TF32 on (PyTorch's default for convolutions)
  fp16        model.half(), NCHW
  fp16_cl     model.half(), channels_last
each eagerly and, unless --no-graph, as a CUDA-graph replay (captured after the warm-up, static input).

--train: one training step as ultralytics' trainer runs it, without the data loader: `model.loss(batch)` (E2ELoss,
both heads, model.train()), backward, `clip_grad_norm_(max_norm=10)`, SGD(lr 0.01, momentum 0.937, nesterov) step,
zero_grad. Configurations: fp32 (TF32 off), tf32, amp (autocast fp16 + GradScaler: ultralytics' default). Boxes:
8 per image, sides 5-45% of the image, fixed seed (as `yolo26 bench --train`).

Timing as `yolo26 bench`: the first call apart (cuDNN algorithm search with cudnn.benchmark = True), --warmup
calls, then --runs calls each timed on the host between two torch.cuda.synchronize(); median and min reported.
Memory: torch.cuda.max_memory_reserved() after the runs. One JSON line per (configuration, batch):
    {"model", "mode", "config", "graph", "batch", "imgsz", "first_call_ms", "median_ms", "min_ms", "images_per_s",
     "memory_reserved_bytes"}
after a first line with the versions and the device. Imports only torch and ultralytics; no network.
"""
import argparse
import json
import os
import statistics
import time

os.environ.setdefault("YOLO_OFFLINE", "1")


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="n")
    ap.add_argument("--batch", default="1,16,64")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--train", action="store_true")
    ap.add_argument("--configs", default=None, help="comma list (default: all of the mode)")
    ap.add_argument("--no-graph", action="store_true")
    return ap.parse_args()


def set_tf32(torch, on):
    torch.backends.cudnn.allow_tf32 = on
    torch.backends.cuda.matmul.allow_tf32 = on


def timed(torch, call, warmup, runs):
    torch.cuda.synchronize()
    t = time.perf_counter()
    call()
    torch.cuda.synchronize()
    first = (time.perf_counter() - t) * 1e3
    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t) * 1e3)
    return first, times


def emit(a, mode, config, graph, batch, first, times, torch):
    med = statistics.median(times)
    print(json.dumps({"model": f"yolo26{a.model}", "mode": mode, "config": config, "graph": graph, "batch": batch,
                      "imgsz": a.imgsz, "first_call_ms": round(first, 3), "median_ms": round(med, 4),
                      "min_ms": round(min(times), 4), "images_per_s": round(batch / med * 1e3, 1),
                      "memory_reserved_bytes": torch.cuda.max_memory_reserved()}), flush=True)


def inference(a, torch, batches):
    from ultralytics.nn.tasks import DetectionModel

    dev = torch.device("cuda")
    for config in (a.configs.split(",") if a.configs else ["fp32", "tf32", "fp16", "fp16_cl"]):
        set_tf32(torch, config == "tf32")
        torch.manual_seed(0)
        model = DetectionModel(f"yolo26{a.model}.yaml", nc=80, verbose=False)
        model.end2end = True
        model = model.fuse(verbose=False).eval().to(dev)
        for p in model.parameters():
            p.requires_grad_(False)
        half = config.startswith("fp16")
        fmt = torch.channels_last if config == "fp16_cl" else torch.contiguous_format
        if half:
            model = model.half()
        model = model.to(memory_format=fmt)
        for batch in batches:
            x = torch.rand(batch, 3, a.imgsz, a.imgsz, device=dev, dtype=torch.float16 if half else torch.float32)
            x = x.to(memory_format=fmt)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()
            with torch.no_grad():
                first, times = timed(torch, lambda: model(x), a.warmup, a.runs)
                emit(a, "inference", config, False, batch, first, times, torch)
                if not a.no_graph:
                    s = torch.cuda.Stream()
                    s.wait_stream(torch.cuda.current_stream())
                    with torch.cuda.stream(s):
                        for _ in range(3):
                            model(x)
                    torch.cuda.current_stream().wait_stream(s)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        model(x)
                    first, times = timed(torch, g.replay, a.warmup, a.runs)
                    emit(a, "inference", config, True, batch, first, times, torch)
                    del g


def random_batch(torch, batch, imgsz, dev, nc=80, per_image=8, seed=0):
    gen = torch.Generator().manual_seed(seed)
    n = batch * per_image
    wh = 0.05 + 0.4 * torch.rand(n, 2, generator=gen)
    xy = torch.rand(n, 2, generator=gen) * (1 - wh) + wh / 2
    return {
        "img": torch.rand(batch, 3, imgsz, imgsz, generator=gen).to(dev),
        "batch_idx": torch.arange(batch).repeat_interleave(per_image).float().to(dev),
        "cls": torch.randint(0, nc, (n, 1), generator=gen).float().to(dev),
        "bboxes": torch.cat([xy, wh], 1).to(dev),
    }


def train(a, torch, batches):
    from ultralytics.cfg import get_cfg
    from ultralytics.nn.tasks import DetectionModel

    dev = torch.device("cuda")
    for config in (a.configs.split(",") if a.configs else ["fp32", "tf32", "amp"]):
        set_tf32(torch, config == "tf32")
        torch.manual_seed(0)
        model = DetectionModel(f"yolo26{a.model}.yaml", nc=80, verbose=False).to(dev)
        model.args = get_cfg()
        model.train()
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.937, nesterov=True, weight_decay=0.0005)
        amp = config == "amp"
        scaler = torch.amp.GradScaler("cuda", enabled=amp)
        for batch in batches:
            b = random_batch(torch, batch, a.imgsz, dev)
            torch.cuda.empty_cache()
            torch.cuda.reset_peak_memory_stats()

            def step():
                with torch.autocast("cuda", enabled=amp):
                    loss, _ = model.loss(b)
                scaler.scale(loss.sum()).backward()
                scaler.unscale_(opt)
                torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=10.0)
                scaler.step(opt)
                scaler.update()
                opt.zero_grad()

            first, times = timed(torch, step, a.warmup, a.runs)
            emit(a, "train", config, False, batch, first, times, torch)


def main():
    a = parse()
    import torch
    import ultralytics

    if not torch.cuda.is_available():
        raise SystemExit("torch_bench.py: CUDA is not available")
    torch.backends.cudnn.benchmark = True
    print(json.dumps({"torch": torch.__version__, "ultralytics": ultralytics.__version__,
                      "cudnn": torch.backends.cudnn.version(), "device": torch.cuda.get_device_name(0)}), flush=True)
    batches = [int(b) for b in a.batch.split(",") if b]
    (train if a.train else inference)(a, torch, batches)


if __name__ == "__main__":
    main()
