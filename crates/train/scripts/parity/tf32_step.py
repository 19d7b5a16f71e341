"""How far one training step moves under tensor-core arithmetic, in PyTorch on the CPU (no GPU needed).

The model is init.pt (make_init.py) in training mode, the batch the first BATCH samples of a dump_batches
directory; every nn.Conv2d is replaced by an emulation of one arithmetic and the features entering the Detect
head (P3, P4, P5) and every parameter gradient are compared with the same step in float64:

- `f32`: plain float32 (the exact path; what Flex and our exact CubeCL kernels compute)
- `tf32`: the forward and the input gradient with x, w, dy rounded to TF32 (10-bit mantissa, round to nearest as
  `__float_to_tf32`), the weight gradient exact (our `ConvMath::Fast`, done right)
- `tf32-trunc`: the same with truncation (tensor cores reading f32 bits as TF32)
- `f16`: x, w and dy rounded to float16 in all three passes, products summed in f32 (the convolutions of `--amp`,
  whose activations are stored in f16; BatchNorm and the loss stay f32 here, so this is a lower bound)
- `tf32+cubek-dgrad`: `tf32` with cubek-convolution 0.2's backward-data formula for the convs it took before the
  fix (groups 1, both channel counts multiples of 8, stride 2): `dy` read at trunc((ih + pad - kh) / stride)
  without checking that the division is exact

    python tf32_step.py DUMP_DIR IMGSZ BATCH [MODES]   (init.pt in /tmp, as make_init.py writes it; MODES comma-separated)
"""
import json
import sys

import numpy as np
import torch
import torch.nn.functional as F
from ultralytics.cfg import get_cfg
from ultralytics.data.dataset import YOLODataset

dump, imgsz, batch = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
torch.manual_seed(0)


def batch_from_dump():
    labels = [json.loads(line) for _, line in zip(range(batch), open(f"{dump}/labels.jsonl"))]
    imgs = np.memmap(f"{dump}/imgs.u8", dtype=np.uint8, mode="r")
    ss, off = [], 0
    for L in labels:
        h, w = L["shape"]
        t = np.array(L["targets"], dtype=np.float32).reshape(-1, 5)
        img = torch.from_numpy(np.array(imgs[off : off + 3 * h * w]).reshape(3, h, w))
        off += 3 * h * w
        ss.append(dict(img=img, cls=torch.from_numpy(t[:, :1].copy()), bboxes=torch.from_numpy(t[:, 1:].copy()),
                       batch_idx=torch.zeros(len(t)), im_file="x", ori_shape=(h, w), resized_shape=(h, w)))
    b = YOLODataset.collate_fn(ss)
    b["img"] = b["img"].float() / 255
    return b


def f16(t):
    return t.half().float() if t.dtype == torch.float32 else t


def tf32(t, trunc=False):
    """Round float32 `t` to TF32 (1 + 8 + 10 bits): nearest, ties away (cvt.rna), or truncated."""
    if t.dtype != torch.float32:
        return t
    i = t.contiguous().view(torch.int32)
    if not trunc:
        i = i + 0x1000
    return (i & ~0x1FFF).view(torch.float32)


def buggy_dgrad(dy, w, x_shape, stride, pad):
    """cubek 0.2 backward-data im2col: dx[ih] += w[kh] * dy[trunc((ih + pad - kh) / stride)] when that row exists."""
    n, ci, h, wd = x_shape
    dx = torch.zeros(x_shape, dtype=dy.dtype)
    oh, ow = dy.shape[2], dy.shape[3]

    def rows(size, k, out):
        pos = torch.arange(size) + pad - k
        q = torch.div(pos, stride, rounding_mode="trunc")
        return q.clamp(0, out - 1), (q >= 0) & (q < out)

    for kh in range(w.shape[2]):
        r, rm = rows(h, kh, oh)
        for kw in range(w.shape[3]):
            c, cm = rows(wd, kw, ow)
            g = dy[:, :, r][:, :, :, c] * (rm[:, None] & cm[None, :])
            dx += torch.einsum("nohw,oi->nihw", g, w[:, :, kh, kw])
    return dx


def rounding(mode):
    if mode == "f16":
        return f16
    if mode.startswith("tf32"):
        return lambda t: tf32(t, mode == "tf32-trunc")
    return lambda t: t


class Conv(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, mode, stride, pad, groups):
        ctx.save_for_backward(x, w)
        ctx.cfg = (mode, stride, pad, groups)
        r = rounding(mode)
        return F.conv2d(r(x), r(w), None, stride, pad, 1, groups)

    @staticmethod
    def backward(ctx, dy):
        x, w = ctx.saved_tensors
        mode, stride, pad, groups = ctx.cfg
        r = rounding(mode)
        cubek_took_it = groups == 1 and x.shape[1] % 8 == 0 and w.shape[0] % 8 == 0
        if mode == "tf32+cubek-dgrad" and cubek_took_it and stride[0] == 2:
            dx = buggy_dgrad(r(dy), r(w), x.shape, stride[0], pad[0])
        else:
            dx = torch.nn.grad.conv2d_input(x.shape, r(w), r(dy), stride, pad, 1, groups)
        dw = torch.nn.grad.conv2d_weight(f16(x) if mode == "f16" else x, w.shape, f16(dy) if mode == "f16" else dy,
                                         stride, pad, 1, groups)
        return dx, dw, None, None, None, None


def run(mode):
    ck = torch.load("/tmp/init.pt", weights_only=False)
    m = ck["model"].float()
    if mode == "f64":
        m = m.double()
    m.args = get_cfg(overrides=dict(imgsz=imgsz, epochs=10))
    m.train()
    for mod in m.modules():
        if isinstance(mod, torch.nn.Conv2d):
            assert mod.dilation == (1, 1) and mod.padding_mode == "zeros"

            def fwd(x, mod=mod):
                y = Conv.apply(x, mod.weight, mode, mod.stride, mod.padding, mod.groups)
                return y if mod.bias is None else y + mod.bias.view(1, -1, 1, 1)

            mod.forward = fwd
    feats = []
    m.model[-1].register_forward_pre_hook(lambda _m, a: feats.append([f.detach().double() for f in a[0]]))
    b = batch_from_dump()
    if mode == "f64":
        b["img"] = b["img"].double()
    loss, items = m(b)
    loss.sum().backward()
    grads = {n: p.grad.detach().double() for n, p in m.named_parameters() if p.grad is not None}
    items = items.values() if isinstance(items, dict) else items  # 8.4.190 returns a dict of loss items
    return feats[0], grads, torch.stack([torch.as_tensor(v).double().reshape(()) for v in items])


rel = lambda a, b: float((a - b).norm() / b.norm().clamp_min(1e-30))
ref_f, ref_g, ref_i = run("f64")
for mode in sys.argv[4].split(",") if len(sys.argv) > 4 else ["f32", "tf32", "tf32-trunc", "f16", "tf32+cubek-dgrad"]:
    f, g, items = run(mode)
    errs = sorted(rel(g[n], ref_g[n]) for n in ref_g if ref_g[n].norm() > 1e-8)
    stem, ref_stem = g["model.0.conv.weight"], ref_g["model.0.conv.weight"]
    cos = float((stem * ref_stem).sum() / (stem.norm() * ref_stem.norm()))
    print(f"{mode:>17}: features P3/P4/P5 {' / '.join(f'{rel(a, b):.1e}' for a, b in zip(f, ref_f))}; "
          f"loss items {' '.join(f'{v:.5f}' for v in items.tolist())} (f64 {' '.join(f'{v:.5f}' for v in ref_i.tolist())}); "
          f"gradient rel. error median {errs[len(errs) // 2]:.1e}, max {errs[-1]:.1e}; "
          f"model.0.conv.weight |g| {stem.norm():.3e} (f64 {ref_stem.norm():.3e}), cos {cos:.4f}", flush=True)
