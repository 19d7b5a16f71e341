"""Run ultra_train.py, but the training dataset returns the samples dumped by our loader (in our order)."""
import json, sys, numpy as np, torch
dump = sys.argv[1]
sys.argv = [sys.argv[2]] + sys.argv[3:]
sys.path.insert(0, "../shared/tools/ultralytics")  # ultra_train.py
labels = [json.loads(l) for l in open(f"{dump}/labels.jsonl")]
imgs = np.memmap(f"{dump}/imgs.u8", dtype=np.uint8, mode="r")
from ultralytics.data.dataset import YOLODataset
orig = YOLODataset.__getitem__
state = {"k": 0}
def getitem(self, index):
    s = orig(self, index)
    if not self.augment:
        return s
    k = state["k"]; state["k"] += 1
    if k >= len(labels):
        raise RuntimeError(f"feed exhausted at {k}")
    L = labels[k]; h, w = L["shape"]
    img = torch.from_numpy(np.array(imgs[k * 3 * h * w:(k + 1) * 3 * h * w]).reshape(3, h, w))
    t = np.array(L["targets"], dtype=np.float32).reshape(-1, 5)
    s["img"] = img
    s["cls"] = torch.from_numpy(t[:, :1].copy())
    s["bboxes"] = torch.from_numpy(t[:, 1:].copy())
    s["batch_idx"] = torch.zeros(len(t))
    if k % 400 == 0:
        print(f"feed: sample {k} (epoch {L['epoch']})", flush=True)
    return s
YOLODataset.__getitem__ = getitem
import ultra_train
ultra_train.main()
print(f"feed: {state['k']} samples used of {len(labels)}")
