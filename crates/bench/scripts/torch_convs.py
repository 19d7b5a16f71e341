#!/usr/bin/env python3
"""Every convolution of an inference-fused ultralytics YOLO26, and what cuDNN takes for each (issue 18).

    python3 torch_convs.py --scales n,s --imgsz 640 --batches 1,64 --out convs.json [--no-time] [--runs 50]

Model: DetectionModel(yolo26{scale}.yaml, nc=80), end2end head, `model.fuse()` (BatchNorm folded into the convs, the
one-to-many branch dropped): the network ultralytics' predictor runs with nms=False, and the one `bench-conv` and
`yolo26 bench` time. A forward hook on every nn.Conv2d records its input shape at batch 1; equal configurations are
merged with a count (how often the network runs them per image batch).

Timing (CUDA only, skipped with --no-time): each distinct conv alone, `F.conv2d(x, w, b)` on random data, in four
configurations: fp32 with TF32 off (exact f32), fp32 with TF32 on (PyTorch's default for convolutions), fp16 NCHW,
fp16 channels-last. cudnn.benchmark = True. A timed sample is `--runs` back-to-back calls between two CUDA events
(per-call time = elapsed / runs); the median of 5 samples is reported, after a warm-up that lets cuDNN pick its
algorithm.

Output JSON (read by `bench-conv --shapes`):
    {"versions": {...}, "device": "...", "imgsz": 640,
     "scales": {"n": [{"id": 0, "count": 1, "c_in": 3, "h": 640, "w": 640, "c_out": 16, "kh": 3, "kw": 3,
                       "stride": 2, "pad": 1, "groups": 1, "first": "model.0.conv"}, ...]},
     "timings": [{"scale": "n", "id": 0, "batch": 64, "config": "fp32", "us": 123.4}, ...]}

Imports only torch and ultralytics.nn.tasks; no network.
"""
import argparse
import json
import os
import statistics

os.environ.setdefault("YOLO_OFFLINE", "1")

CONFIGS = ("fp32", "tf32", "fp16", "fp16_cl")


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scales", default="n,s")
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--no-time", action="store_true")
    ap.add_argument("--out", required=True)
    return ap.parse_args()


def conv_list(scale, imgsz, torch):
    from ultralytics.nn.tasks import DetectionModel

    torch.manual_seed(0)
    model = DetectionModel(f"yolo26{scale}.yaml", nc=80, verbose=False)
    model.end2end = True
    model = model.fuse(verbose=False).eval()
    names = {m: n for n, m in model.named_modules()}
    seen = {}
    order = []

    def hook(mod, inp, _out):
        x = inp[0]
        key = (x.shape[1], x.shape[2], x.shape[3], mod.out_channels, *mod.kernel_size, mod.stride[0],
               mod.padding[0], mod.groups)
        assert mod.stride[0] == mod.stride[1] and mod.padding[0] == mod.padding[1], names[mod]
        assert mod.dilation == (1, 1), names[mod]
        if key not in seen:
            seen[key] = {"count": 0, "first": names[mod]}
            order.append(key)
        seen[key]["count"] += 1

    handles = [m.register_forward_hook(hook) for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    with torch.no_grad():
        model(torch.zeros(1, 3, imgsz, imgsz))
    for h in handles:
        h.remove()
    out = []
    for i, k in enumerate(order):
        c_in, h, w, c_out, kh, kw, s, p, g = (int(v) for v in k)
        out.append({"id": i, "count": seen[k]["count"], "c_in": c_in, "h": h, "w": w, "c_out": c_out, "kh": kh,
                    "kw": kw, "stride": s, "pad": p, "groups": g, "first": seen[k]["first"]})
    return out


def time_conv(c, batch, config, a, torch):
    import torch.nn.functional as F

    dev = torch.device("cuda")
    torch.backends.cudnn.allow_tf32 = config == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = config == "tf32"
    dtype = torch.float16 if config.startswith("fp16") else torch.float32
    fmt = torch.channels_last if config == "fp16_cl" else torch.contiguous_format
    x = torch.randn(batch, c["c_in"], c["h"], c["w"], device=dev, dtype=dtype).to(memory_format=fmt)
    wt = torch.randn(c["c_out"], c["c_in"] // c["groups"], c["kh"], c["kw"], device=dev, dtype=dtype)
    wt = wt.to(memory_format=fmt)
    b = torch.randn(c["c_out"], device=dev, dtype=dtype)

    def call():
        return F.conv2d(x, wt, b, stride=c["stride"], padding=c["pad"], groups=c["groups"])

    with torch.no_grad():
        for _ in range(a.warmup):
            call()
        torch.cuda.synchronize()
        samples = []
        for _ in range(5):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(a.runs):
                call()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) * 1000.0 / a.runs)
    return statistics.median(samples)


def main():
    a = parse()
    import torch
    import ultralytics

    torch.backends.cudnn.benchmark = True
    cuda = torch.cuda.is_available()
    result = {
        "versions": {"torch": torch.__version__, "ultralytics": ultralytics.__version__,
                     "cudnn": torch.backends.cudnn.version() if cuda else None},
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "imgsz": a.imgsz,
        "scales": {},
        "timings": [],
    }
    batches = [int(b) for b in a.batches.split(",") if b]
    for scale in a.scales.split(","):
        convs = conv_list(scale, a.imgsz, torch)
        result["scales"][scale] = convs
        print(f"yolo26{scale}: {len(convs)} distinct convs, {sum(c['count'] for c in convs)} calls per forward")
        if a.no_time or not cuda:
            continue
        for batch in batches:
            totals = dict.fromkeys(CONFIGS, 0.0)
            for c in convs:
                for config in CONFIGS:
                    us = time_conv(c, batch, config, a, torch)
                    totals[config] += us * c["count"]
                    result["timings"].append({"scale": scale, "id": c["id"], "batch": batch, "config": config,
                                              "us": round(us, 2)})
            print(f"  batch {batch}: sum over the network (µs): "
                  + ", ".join(f"{k} {v:.0f}" for k, v in totals.items()))
    tmp = a.out + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f, indent=1)
    os.replace(tmp, a.out)


if __name__ == "__main__":
    main()
