"""Writes model/yolo26n.onnx: ultralytics' own ONNX export of the bundled random-calibrated yolo26n checkpoint.

    python3 -m venv .venv && .venv/bin/pip install "ultralytics==8.4.190" onnx onnxslim
    .venv/bin/python export_onnx.py            # from crates/onnx-crosscheck

Export settings are ultralytics' defaults for `format="onnx"` (opset 18 with torch 2.x, onnxslim, Conv+BN fused,
one-to-many head because the checkpoint is saved with end2end False) at imgsz 224, the size of the parity
fixture `tests/fixtures/yolo26n_hash.safetensors` whose `input` the Rust test feeds to both models.
"""
import shutil
from pathlib import Path

from ultralytics import YOLO

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
src = ROOT / "assets" / "yolo26n-calib.pt"
work = HERE / "model"
work.mkdir(exist_ok=True)
pt = work / "yolo26n.pt"
shutil.copy(src, pt)  # the exporter writes next to its input
onnx = YOLO(str(pt)).export(format="onnx", imgsz=224, device="cpu")
shutil.move(onnx, work / "yolo26n.onnx")
pt.unlink()
print(f"wrote {work / 'yolo26n.onnx'} ({(work / 'yolo26n.onnx').stat().st_size:,} bytes)")
