"""Save a fresh ultralytics yolo26n (nc 3, init_seeds(1)) as /tmp/init.pt: the shared initial weights."""
import torch
from ultralytics.utils.torch_utils import init_seeds
from ultralytics.nn.tasks import DetectionModel
init_seeds(1)
m = DetectionModel("yolo26n.yaml", nc=3, verbose=False)
m.names = {0: "circle", 1: "square", 2: "triangle"}
torch.save({"model": m, "train_args": {}, "epoch": -1}, "/tmp/init.pt")
print(sum(p.numel() for p in m.parameters()))
