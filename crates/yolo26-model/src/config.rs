//! Model scales and the channel/depth arithmetic of ultralytics' `parse_model` for `yolo26.yaml`.

use std::fmt;
use std::str::FromStr;

/// The five published scales of `yolo26.yaml` (`scales:` block: depth, width, max_channels).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Scale {
    N,
    S,
    M,
    L,
    X,
}

impl Scale {
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
    pub scale: Scale,
    pub nc: usize,
}

impl Yolo26Config {
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
