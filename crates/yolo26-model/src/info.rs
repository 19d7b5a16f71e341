//! Model summary: per-layer table (as ultralytics' `parse_model` prints it), parameter count and GFLOPs.
//!
//! GFLOPs follow ultralytics' `get_flops` (thop): 2 × multiply-accumulates of every convolution (bias not counted, as thop)
//! plus thop's BatchNorm count (4 multiply-accumulates per element) and the two attention matmuls of each PSA block,
//! at a square `imgsz`.

use burn::module::{Module, ModuleVisitor, Param};
use burn::prelude::*;

use crate::config::Yolo26Config;
use crate::model::Yolo26;

/// One row of the summary.
#[derive(Debug, Clone)]
pub struct LayerRow {
    /// The yaml row (`model.N`).
    pub index: usize,
    /// The row's inputs as the yaml writes them (`-1`, `[-1, 6]`, ...).
    pub from: &'static str,
    /// Repeat count column (always 1: repeats are resolved into the module's arguments, as ultralytics prints).
    pub repeats: usize,
    /// Trainable parameters of the row.
    pub params: usize,
    /// ultralytics module name (`Conv`, `C3k2`, ...).
    pub module: &'static str,
    /// Resolved arguments as `parse_model` prints them.
    pub args: String,
}

/// The yaml rows: (index, from, module name).
const ROWS: [(usize, &str, &str); 24] = [
    (0, "-1", "Conv"),
    (1, "-1", "Conv"),
    (2, "-1", "C3k2"),
    (3, "-1", "Conv"),
    (4, "-1", "C3k2"),
    (5, "-1", "Conv"),
    (6, "-1", "C3k2"),
    (7, "-1", "Conv"),
    (8, "-1", "C3k2"),
    (9, "-1", "SPPF"),
    (10, "-1", "C2PSA"),
    (11, "-1", "Upsample"),
    (12, "[-1, 6]", "Concat"),
    (13, "-1", "C3k2"),
    (14, "-1", "Upsample"),
    (15, "[-1, 4]", "Concat"),
    (16, "-1", "C3k2"),
    (17, "-1", "Conv"),
    (18, "[-1, 13]", "Concat"),
    (19, "-1", "C3k2"),
    (20, "-1", "Conv"),
    (21, "[-1, 10]", "Concat"),
    (22, "-1", "C3k2"),
    (23, "[16, 19, 22]", "Detect"),
];

fn conv_args<B: Backend>(c: &crate::nn::conv::Conv<B>) -> String {
    let [co, ci, k, _] = c.conv.weight.dims();
    format!("[{ci}, {co}, {k}, {}]", c.conv.stride[0])
}

fn c3k2_args<B: Backend>(m: &crate::nn::blocks::C3k2<B>, c3k: bool, attn: bool) -> String {
    let ci = m.cv1.conv.weight.dims()[1];
    let co = m.cv2.conv.weight.dims()[0];
    let mut s = format!("[{ci}, {co}, {}, {}", m.m.len(), if c3k { "True" } else { "False" });
    if attn {
        s.push_str(", 0.5, True");
    }
    s.push(']');
    s
}

/// The layer table of a model.
pub fn layer_table<B: Backend>(model: &Yolo26<B>, cfg: &Yolo26Config) -> Vec<LayerRow> {
    let c3k = cfg.scale.forces_c3k();
    let r = |i: usize, from: &'static str, module: &'static str, params: usize, args: String, n: usize| LayerRow {
        index: i,
        from,
        repeats: n,
        params,
        module,
        args,
    };
    ROWS.iter()
        .map(|&(i, from, module)| {
            let (params, args) = match i {
                0 => (count_params(&model.layer0), conv_args(&model.layer0)),
                1 => (count_params(&model.layer1), conv_args(&model.layer1)),
                2 => (count_params(&model.layer2), c3k2_args(&model.layer2, c3k, false)),
                3 => (count_params(&model.layer3), conv_args(&model.layer3)),
                4 => (count_params(&model.layer4), c3k2_args(&model.layer4, c3k, false)),
                5 => (count_params(&model.layer5), conv_args(&model.layer5)),
                6 => (count_params(&model.layer6), c3k2_args(&model.layer6, true, false)),
                7 => (count_params(&model.layer7), conv_args(&model.layer7)),
                8 => (count_params(&model.layer8), c3k2_args(&model.layer8, true, false)),
                9 => {
                    let c1 = model.layer9.cv1.conv.weight.dims()[1];
                    let c2 = model.layer9.cv2.conv.weight.dims()[0];
                    (count_params(&model.layer9), format!("[{c1}, {c2}, 5, 3, True]"))
                }
                10 => {
                    let c = model.layer10.cv1.conv.weight.dims()[1];
                    (count_params(&model.layer10), format!("[{c}, {c}, {}]", model.layer10.m.len()))
                }
                11 | 14 => (0, "[None, 2, 'nearest']".into()),
                12 | 15 | 18 | 21 => (0, "[1]".into()),
                13 => (count_params(&model.layer13), c3k2_args(&model.layer13, true, false)),
                16 => (count_params(&model.layer16), c3k2_args(&model.layer16, true, false)),
                17 => (count_params(&model.layer17), conv_args(&model.layer17)),
                19 => (count_params(&model.layer19), c3k2_args(&model.layer19, true, false)),
                20 => (count_params(&model.layer20), conv_args(&model.layer20)),
                22 => (count_params(&model.layer22), c3k2_args(&model.layer22, true, true)),
                _ => {
                    let ch: Vec<usize> = model.layer23.cv2.iter().map(|b| b.i0.conv.weight.dims()[1]).collect();
                    (count_params(&model.layer23), format!("[{}, 1, True, {ch:?}]", model.layer23.nc))
                }
            };
            r(i, from, module, params, args, 1)
        })
        .collect()
}

struct ParamCounter {
    last: Vec<String>,
    n: usize,
}

impl<B: Backend> ModuleVisitor<B> for ParamCounter {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.last.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.last.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        if !matches!(self.last.last().map(String::as_str), Some("running_mean" | "running_var")) {
            self.n += param.val().dims().iter().product::<usize>();
        }
    }
}

/// Trainable parameters of a module (Burn's `num_params` also counts BatchNorm running statistics; ultralytics
/// does not).
pub fn count_params<B: Backend, M: Module<B>>(m: &M) -> usize {
    let mut c = ParamCounter { last: Vec::new(), n: 0 };
    m.visit(&mut c);
    c.n
}

/// Output side length (square input `imgsz`) of every yaml row, and of each Detect level.
fn row_resolution(i: usize, imgsz: usize) -> usize {
    let s = match i {
        0 => 2,
        1 | 2 => 4,
        3 | 4 | 14 | 15 | 16 => 8,
        5 | 6 | 11 | 12 | 13 | 17 | 18 | 19 => 16,
        _ => 32,
    };
    imgsz.div_ceil(s)
}

struct FlopCounter {
    path: Vec<String>,
    imgsz: usize,
    per_layer: [f64; 24],
}

impl<B: Backend> ModuleVisitor<B> for FlopCounter {
    fn enter_module(&mut self, name: &str, _container: &str) {
        self.path.push(name.to_string());
    }
    fn exit_module(&mut self, _name: &str, _container: &str) {
        self.path.pop();
    }
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<B, D>>) {
        let layer: usize = match self.path.first().and_then(|p| p.strip_prefix("layer")).and_then(|n| n.parse().ok()) {
            Some(l) => l,
            None => return,
        };
        let res = if layer == 23 {
            // layer23.<branch>.<level>....
            let level: usize = self.path.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
            self.imgsz.div_ceil(8 << level)
        } else {
            row_resolution(layer, self.imgsz)
        };
        let hw = (res * res) as f64;
        let dims = param.val().dims();
        let last = self.path.last().map(String::as_str).unwrap_or("");
        let numel: usize = dims.iter().product();
        let macs = match (D, last) {
            (4, "weight") => numel as f64 * hw,      // conv: c_out · c_in/g · k² per output pixel
            (1, "gamma") => 4.0 * numel as f64 * hw, // BatchNorm (thop: 2 per element, doubled when affine)
            _ => 0.0,
        };
        self.per_layer[layer] += 2.0 * macs;
    }
}

/// GFLOPs of each yaml row at `imgsz × imgsz` (thop convention, see module docs).
pub fn gflops_per_layer<B: Backend>(model: &Yolo26<B>, imgsz: usize) -> [f64; 24] {
    let mut c = FlopCounter { path: Vec::new(), imgsz, per_layer: [0.0; 24] };
    model.visit(&mut c);
    // attention matmuls `(q·scale)ᵀk` and `v·attnᵀ` (ultralytics-thop counts them too), both at P5 resolution
    let n = row_resolution(10, imgsz).pow(2) as f64;
    let attn = |a: &crate::nn::attention::Attention<B>| 2.0 * (a.num_heads * (a.key_dim + a.head_dim)) as f64 * n * n;
    c.per_layer[10] += model.layer10.m.iter().map(|b| attn(&b.attn)).sum::<f64>();
    for blk in &model.layer22.m {
        if let crate::nn::blocks::C3k2Block::Attn(b) = blk {
            c.per_layer[22] += attn(&b.i1.attn);
        }
    }
    c.per_layer.map(|f| f / 1e9)
}

/// GFLOPs of a forward pass at `imgsz × imgsz` (thop convention, see module docs).
pub fn gflops<B: Backend>(model: &Yolo26<B>, imgsz: usize) -> f64 {
    gflops_per_layer(model, imgsz).iter().sum::<f64>()
}
