"""Checks that ultralytics loads a `.pt` written by `yolo26 convert --out X.pt` exactly.

    python scripts/check_pt_in_ultralytics.py REF.safetensors X.pt [Y.pt ...] [--data data.yaml --imgsz N]

For each `.pt`: `YOLO(pt)` (ultralytics' own loader: torch.load + the checkpoint's `model`), the model's
state_dict against REF (every key present, largest absolute difference), its class names and task, one predict on a
random image; with `--data`, also `model.val(data=..., imgsz=...)` so the mAP can be compared with `yolo26 val`.
Needs torch, safetensors and ultralytics (8.4.190 was used). Exits non-zero when a key is missing or a value
differs by more than f16 rounding.
"""

import argparse
import sys

import torch
from safetensors.torch import load_file
from ultralytics import YOLO


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("reference")
    ap.add_argument("pts", nargs="+")
    ap.add_argument("--data")
    ap.add_argument("--imgsz", type=int, default=640)
    a = ap.parse_args()
    ref = load_file(a.reference)
    ok = True
    for pt in a.pts:
        m = YOLO(pt)
        msd = m.model.state_dict()
        missing = [k for k in ref if k not in msd]
        extra = [k for k in msd if k not in ref and not k.endswith("num_batches_tracked")]
        diff = max((msd[k].float() - ref[k].float()).abs().max().item() for k in ref if k in msd)
        print(f"{pt}: {type(m.model).__name__} task={m.task} names={m.names}")
        print(f"  keys {len(msd)} (reference {len(ref)}), missing {len(missing)}, extra {len(extra)}, max |diff| {diff:.3g}")
        r = m.predict(torch.rand(1, 3, 64, 64), imgsz=64, verbose=False)
        print(f"  predict on a random image: {len(r[0].boxes)} boxes")
        if a.data:
            res = m.val(data=a.data, imgsz=a.imgsz, plots=False, verbose=False)
            print(f"  val: mAP50 {res.box.map50:.4f}  mAP50-95 {res.box.map:.4f}")
        ok &= not missing and not extra and diff < 4e-3
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
