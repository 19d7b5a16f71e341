#!/usr/bin/env python3
"""ultralytics' own training dataloader, timed: the reference for `bench-loader` (same data, workers, batch, imgsz).

    python3 crates/bench/scripts/ultra_loader_bench.py --data DIR/data.yaml --imgsz 640 --batch 64 --workers 16 \
        --batches 60 --warmup 5 [--json OUT.json]

Builds exactly what `DetectionTrainer.get_dataloader(mode="train")` builds in ultralytics 8.4.190 — `build_yolo_dataset`
(`YOLODataset`, augment=True, the default hyperparameters of cfg/default.yaml: mosaic 1.0, random_perspective,
HSV, fliplr 0.5) and `build_dataloader` (`InfiniteDataLoader`, shuffle, the given workers, pin_memory) — and iterates
it without a model: images/s = batches x batch / seconds after `--warmup` batches (worker start and the first
decodes excluded). Offline (YOLO_OFFLINE=1); the label cache is written next to the labels as ultralytics does.
Prints one JSON line.
"""
import argparse
import json
import os
import time

os.environ.setdefault("YOLO_OFFLINE", "1")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--batches", type=int, default=60)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--timeout", type=float, default=0, help="seconds; print every thread's stack and exit after it")
    a = ap.parse_args()
    if a.timeout > 0:
        import faulthandler

        faulthandler.dump_traceback_later(a.timeout, exit=True)

    import torch
    from ultralytics.cfg import get_cfg
    from ultralytics.data import build_dataloader, build_yolo_dataset
    from ultralytics.data.utils import check_det_dataset
    from ultralytics.utils import DEFAULT_CFG

    cfg = get_cfg(DEFAULT_CFG, {"imgsz": a.imgsz, "batch": a.batch, "workers": a.workers, "data": a.data})
    data = check_det_dataset(a.data)
    ds = build_yolo_dataset(cfg, data["train"], a.batch, data, mode="train", rect=False, stride=32)
    dl = build_dataloader(ds, a.batch, a.workers, shuffle=True, rank=-1, pin_memory=torch.cuda.is_available())
    def batches():  # epochs chained: one iter() of the InfiniteDataLoader is one epoch
        while True:
            yield from dl

    it = batches()
    for _ in range(a.warmup):
        next(it)
    n_img = 0
    t0 = time.perf_counter()
    for _ in range(a.batches):
        b = next(it)
        n_img += b["img"].shape[0]
    dt = time.perf_counter() - t0
    out = {
        "loader": "ultralytics",
        "imgsz": a.imgsz,
        "batch": a.batch,
        "workers": a.workers,
        "batches": a.batches,
        "images": n_img,
        "seconds": dt,
        "images_per_s": n_img / dt,
        "dataset_images": len(ds),
        "torch": torch.__version__,
    }
    print(json.dumps(out), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)
    os._exit(0)  # do not wait for the infinite loader's workers


if __name__ == "__main__":
    main()
