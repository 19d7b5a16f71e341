"""Line up per-iteration running loss means: ultralytics log (argv 1) vs `yolo26 train` with YOLO26_LOG_EVERY=0 (argv 2).

The patterns are those of the documented run (10 epochs, imgsz 320, 25 batches per epoch): edit them for another.
Ultralytics' bar shows `k/25` before batch k+1 is counted, hence the shift by one."""
import re, sys

u = open(sys.argv[1], encoding="utf8", errors="ignore").read().replace("\r", "\n")
uv = {}
for line in u.split("\n"):
    m = re.search(r"\s(\d+)/10\s+\S+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+(\d+)\s+320:\s+\d+% \S+ (\d+)/25", line)
    if m:
        e, b = int(m.group(1)), int(m.group(6))
        uv[(e, b + 1)] = tuple(float(m.group(i)) for i in (2, 3, 4))
ov = {}
for line in open(sys.argv[2]):
    m = re.match(r"epoch (\d+)/10  batch (\d+)/25  box_loss ([\d.]+)  cls_loss ([\d.]+)  l1_loss ([\d.]+)", line)
    if m:
        ov[(int(m.group(1)), int(m.group(2)))] = tuple(float(m.group(i)) for i in (3, 4, 5))
for k in sorted(ov):
    if k in uv and (k[0] <= 2 or k[1] in (1, 13, 25)):
        print(k, "ours %.4f %.4f %.4f" % ov[k], " ultra %.4f %.4f %.4f" % uv[k])
