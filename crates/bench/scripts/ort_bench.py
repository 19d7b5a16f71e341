"""ONNX Runtime's CPU time for yolo26n at 640, batch 1 — the reference of `yolo26 bench --device cpu` (issue 18 item 7).

    pip install "ultralytics==8.4.190" onnx onnxslim onnxruntime
    python3 -c "from ultralytics import YOLO; YOLO('assets/yolo26n-calib.pt').export(format='onnx', imgsz=640)"
    python3 crates/bench/scripts/ort_bench.py assets/yolo26n-calib.onnx [--threads 2] [--runs 60]

Prints the median and minimum of `--runs` timed calls after 5 untimed ones, with `--threads` intra-op threads
(match the cores `yolo26 bench` uses).
"""
import argparse
import statistics
import time

import numpy as np
import onnxruntime as ort

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--runs", type=int, default=60)
a = ap.parse_args()
opts = ort.SessionOptions()
opts.intra_op_num_threads = a.threads
sess = ort.InferenceSession(a.model, opts, providers=["CPUExecutionProvider"])
x = np.random.default_rng(0).random((1, 3, 640, 640), dtype=np.float32)
name = sess.get_inputs()[0].name
for _ in range(5):
    sess.run(None, {name: x})
times = []
for _ in range(a.runs):
    t = time.perf_counter()
    sess.run(None, {name: x})
    times.append((time.perf_counter() - t) * 1e3)
print(f"onnxruntime {ort.__version__}, {a.threads} threads: median {statistics.median(times):.1f} ms, min {min(times):.1f} ms")
