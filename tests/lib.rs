//! Shared helpers for the integration tests: fixture lookup and the closed-form "hash" weights/inputs that
//! `tests/fixtures/generate.py` uses on the ultralytics side.

use std::path::PathBuf;

/// Finds `rel` (e.g. `tests/fixtures/x.safetensors`) by walking up from the working directory, so the same test
/// binary works from the crate directory (`cargo test`) and from the repository root (the GPU machine).
pub fn fixture(rel: &str) -> PathBuf {
    let mut dir = std::env::current_dir().expect("current dir");
    loop {
        let cand = dir.join(rel);
        if cand.exists() {
            return cand;
        }
        if !dir.pop() {
            panic!("fixture '{rel}' not found above {:?}", std::env::current_dir());
        }
    }
}

/// lowbias32 integer hash (Chris Wellons), wrapping u32 arithmetic.
pub fn lowbias32(mut u: u32) -> u32 {
    u ^= u >> 16;
    u = u.wrapping_mul(0x7feb_352d);
    u ^= u >> 15;
    u = u.wrapping_mul(0x846c_a68b);
    u ^= u >> 16;
    u
}

/// 32-bit FNV-1a of a string's UTF-8 bytes.
pub fn fnv1a32(s: &str) -> u32 {
    let mut h = 0x811c_9dc5u32;
    for b in s.bytes() {
        h ^= b as u32;
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// Uniform value in [0, 1) for element `i` of the tensor named `key`.
pub fn hash_unit(key: &str, i: usize) -> f64 {
    lowbias32((i as u32) ^ lowbias32(fnv1a32(key))) as f64 / 4_294_967_296.0
}

/// Conv weight of the hash models: `(2u - 1) / sqrt(fan_in)`, rounded f64 → f32 → f16 (as the generator does).
pub fn hash_conv_weight(key: &str, shape: &[usize]) -> Vec<f32> {
    let fan_in: usize = shape[1..].iter().product();
    let bound = 1.0 / (fan_in as f64).sqrt();
    let n: usize = shape.iter().product();
    (0..n).map(|i| half::f16::from_f32(((2.0 * hash_unit(key, i) - 1.0) * bound) as f32).to_f32()).collect()
}

/// The closed-form image input: `lowbias32(i) / 2^32` over the flat NCHW index (reference §2.6).
pub fn hash_input(n: usize) -> Vec<f32> {
    (0..n).map(|i| (lowbias32(i as u32) as f32) / 4_294_967_296.0).collect()
}

use burn::prelude::*;
use yolo26_model::load::collect_weights;
use yolo26_model::weights::{read_safetensors, FileDType, WeightMap, WeightTensor};
use yolo26_model::{Scale, Yolo26Config};

/// A reference fixture written by `tests/fixtures/generate.py` (`yolo26{n,m}_hash.safetensors`).
pub struct HashFixture {
    pub scale: Scale,
    pub file: WeightMap,
}

impl HashFixture {
    pub fn load(scale: Scale) -> Self {
        let path = fixture(&format!("tests/fixtures/yolo26{scale}_hash.safetensors"));
        HashFixture { scale, file: read_safetensors(&path).expect("fixture reads") }
    }

    /// A stored tensor (`input`, `layer04`, `o2m_boxes`, ...).
    pub fn get(&self, key: &str) -> &WeightTensor {
        self.file.tensors.get(key).unwrap_or_else(|| panic!("fixture has no '{key}'"))
    }

    pub fn tensor<B: Backend, const D: usize>(&self, key: &str, device: &B::Device) -> Tensor<B, D> {
        let t = self.get(key);
        Tensor::from_data(burn::tensor::TensorData::new(t.data.clone(), t.shape.clone()), device)
    }

    /// The full ultralytics state_dict of the hash model: 4-D conv weights regenerated from the closed-form rule,
    /// everything else (BatchNorm, biases, `num_batches_tracked`) from the fixture's `sd.*` tensors.
    pub fn state_dict(&self) -> WeightMap {
        let shapes = collect_weights::<burn::backend::Flex, _>(
            &Yolo26Config::new(self.scale, 80).init::<burn::backend::Flex>(&Default::default()),
        );
        let mut map = WeightMap { source: format!("hash yolo26{}", self.scale).into(), ..Default::default() };
        for (key, t) in shapes.tensors {
            let w = if t.shape.len() == 4 {
                WeightTensor { data: hash_conv_weight(&key, &t.shape), shape: t.shape, dtype: FileDType::F16 }
            } else {
                self.get(&format!("sd.{key}")).clone()
            };
            map.tensors.insert(key, w);
        }
        map
    }
}

/// `‖a − b‖ / ‖b‖` and `max |a − b|` over two equally long slices.
pub fn rel_l2(a: &[f32], b: &[f32]) -> (f64, f64) {
    assert_eq!(a.len(), b.len(), "length mismatch");
    let mut num = 0f64;
    let mut den = 0f64;
    let mut max = 0f64;
    for (x, y) in a.iter().zip(b) {
        let d = (*x as f64 - *y as f64).abs();
        assert!(d.is_finite(), "non-finite value: {x} vs {y}");
        num += d * d;
        den += (*y as f64) * (*y as f64);
        max = max.max(d);
    }
    ((num / den.max(1e-30)).sqrt(), max)
}

/// Host copy of a tensor as f32.
pub fn host<B: Backend, const D: usize>(t: Tensor<B, D>) -> Vec<f32> {
    t.cast(burn::tensor::DType::F32).into_data().convert::<f32>().to_vec::<f32>().expect("f32")
}
