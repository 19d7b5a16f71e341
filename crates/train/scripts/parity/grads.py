"""Gradients of the trainer's loss for init.pt on the first training batch of our dump (the trainer's first step)."""
import json, numpy as np, torch
from safetensors.torch import save_file
from ultralytics.cfg import get_cfg
from ultralytics.data.dataset import YOLODataset
ck = torch.load("/tmp/init.pt", weights_only=False)
m = ck["model"].float()
m.args = get_cfg(overrides=dict(imgsz=320, epochs=10))
m.train()
labels = [json.loads(l) for l in open("/tmp/dump320/labels.jsonl")]
imgs = np.memmap("/tmp/dump320/imgs.u8", dtype=np.uint8, mode="r")
ss = []
for k in range(16):
    L = labels[k]; h, w = L["shape"]
    t = np.array(L["targets"], dtype=np.float32).reshape(-1, 5)
    ss.append(dict(img=torch.from_numpy(np.array(imgs[k*3*h*w:(k+1)*3*h*w]).reshape(3, h, w)),
                   cls=torch.from_numpy(t[:, :1].copy()), bboxes=torch.from_numpy(t[:, 1:].copy()),
                   batch_idx=torch.zeros(len(t)), im_file="x", ori_shape=(h, w), resized_shape=(h, w)))
b = YOLODataset.collate_fn(ss)
b["img"] = b["img"].float() / 255
loss, items = m(b)
print("items", {k: float(v) for k, v in items.items()}, "loss", float(loss.sum()))
loss.sum().backward()
g = {n: p.grad.detach().contiguous() for n, p in m.named_parameters() if p.grad is not None}
print(len(g), "grads")
save_file(g, "/tmp/ugrads.safetensors")
