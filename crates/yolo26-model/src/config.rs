//! Model scales and the channel/depth arithmetic of ultralytics' `parse_model` for `yolo26.yaml`.

use std::fmt;
use std::str::FromStr;

/// The five published scales of `yolo26.yaml` (`scales:` block: depth, width, max_channels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Scale {
    /// yolo26n: depth 0.50, width 0.25, max_channels 1024.
    N,
    /// yolo26s: depth 0.50, width 0.50, max_channels 1024.
    S,
    /// yolo26m: depth 0.50, width 1.00, max_channels 512.
    M,
    /// yolo26l: depth 1.00, width 1.00, max_channels 512.
    L,
    /// yolo26x: depth 1.00, width 1.50, max_channels 512.
    X,
}

impl Scale {
    /// Every scale, smallest first.
    pub const ALL: [Scale; 5] = [Scale::N, Scale::S, Scale::M, Scale::L, Scale::X];

    /// `[depth, width, max_channels]` from the yaml.
    pub fn multipliers(self) -> (f64, f64, usize) {
        match self {
            Scale::N => (0.50, 0.25, 1024),
            Scale::S => (0.50, 0.50, 1024),
            Scale::M => (0.50, 1.00, 512),
            Scale::L => (1.00, 1.00, 512),
            Scale::X => (1.00, 1.50, 512),
        }
    }

    /// `parse_model` forces `c3k=True` on every C3k2 for m/l/x.
    pub fn forces_c3k(self) -> bool {
        matches!(self, Scale::M | Scale::L | Scale::X)
    }

    /// The scale's letter in model names (`yolo26n`, ...).
    pub fn letter(self) -> char {
        match self {
            Scale::N => 'n',
            Scale::S => 's',
            Scale::M => 'm',
            Scale::L => 'l',
            Scale::X => 'x',
        }
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.letter())
    }
}

impl FromStr for Scale {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().trim_start_matches("yolo26") {
            "n" => Ok(Scale::N),
            "s" => Ok(Scale::S),
            "m" => Ok(Scale::M),
            "l" => Ok(Scale::L),
            "x" => Ok(Scale::X),
            other => Err(format!("unknown model scale '{other}': expected one of n, s, m, l, x")),
        }
    }
}

/// What a YOLO26 model is built from: a scale and the number of classes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Yolo26Config {
    /// Model scale (width, depth, max_channels).
    pub scale: Scale,
    /// Number of classes.
    pub nc: usize,
}

impl Yolo26Config {
    /// A config of `scale` with `nc` classes.
    pub fn new(scale: Scale, nc: usize) -> Self {
        Yolo26Config { scale, nc }
    }

    /// `make_divisible(min(c, max_channels) * width, 8)`.
    pub fn ch(&self, c: usize) -> usize {
        let (_, w, mc) = self.scale.multipliers();
        let x = c.min(mc) as f64 * w;
        ((x / 8.0).ceil() as usize) * 8
    }

    /// `max(round(n * depth), 1) if n > 1 else n` (Python's round: half to even).
    pub fn repeats(&self, n: usize) -> usize {
        if n <= 1 {
            return n;
        }
        let (d, _, _) = self.scale.multipliers();
        let x = n as f64 * d;
        let r = x.round();
        let r = if (x - x.trunc() - 0.5).abs() < 1e-12 && (r as i64) % 2 != 0 { r - 1.0 } else { r };
        (r as usize).max(1)
    }
}

/// Output strides of P3, P4, P5.
pub const STRIDES: [usize; 3] = [8, 16, 32];
