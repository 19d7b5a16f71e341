//! What the proptest fuzz targets of the weight readers, the image decoder and the dataset parsers share
//! (docs/robustness.md): the fixed-seed configuration CI runs, and byte-level mutations of a valid seed input.

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;

/// Fixed seed, no persistence files, `cases` cases: the few seconds CI runs. A longer run (docs/robustness.md):
/// `YOLO26_FUZZ_SCALE=N` runs N times the cases, `YOLO26_FUZZ_SEED=S` draws them from seed S.
pub fn config(cases: u32) -> ProptestConfig {
    let env = |name: &str| std::env::var(name).ok().and_then(|v| v.parse::<u64>().ok());
    let scale = env("YOLO26_FUZZ_SCALE").unwrap_or(1).clamp(1, 100_000) as u32;
    ProptestConfig {
        cases: cases.saturating_mul(scale),
        failure_persistence: None,
        rng_seed: RngSeed::Fixed(env("YOLO26_FUZZ_SEED").unwrap_or(0x5EED_0019)),
        ..ProptestConfig::default()
    }
}

/// One byte-level edit; positions are taken modulo the current length.
#[derive(Clone, Debug)]
pub enum Edit {
    Xor(usize, u8),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Remove(usize, usize),
    Truncate(usize),
    /// Copy `n` bytes from one position over another.
    Copy(usize, usize, usize),
}

/// Edits, with `Set` drawing from the edge values 0, 0xff, 0x7f, 0x80, the format's own `special` bytes (e.g. JPEG
/// marker bytes) and any byte.
pub fn edit(special: &'static [u8]) -> impl Strategy<Value = Edit> {
    let byte = prop_oneof![
        proptest::sample::select(vec![0u8, 0xff, 0x7f, 0x80]),
        proptest::sample::select(if special.is_empty() { vec![0u8] } else { special.to_vec() }),
        any::<u8>()
    ];
    prop_oneof![
        3 => (any::<usize>(), 1u8..).prop_map(|(i, b)| Edit::Xor(i, b)),
        3 => (any::<usize>(), byte).prop_map(|(i, b)| Edit::Set(i, b)),
        1 => (any::<usize>(), vec(any::<u8>(), 1..16)).prop_map(|(i, b)| Edit::Insert(i, b)),
        1 => (any::<usize>(), 1usize..64).prop_map(|(i, n)| Edit::Remove(i, n)),
        1 => any::<usize>().prop_map(Edit::Truncate),
        1 => (any::<usize>(), any::<usize>(), 1usize..32).prop_map(|(a, b, n)| Edit::Copy(a, b, n)),
    ]
}

/// `seed` with `edits` applied in order.
pub fn mutate(seed: &[u8], edits: &[Edit]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for e in edits {
        let len = b.len();
        match e {
            Edit::Xor(i, x) if len > 0 => b[i % len] ^= x,
            Edit::Set(i, x) if len > 0 => b[i % len] = *x,
            Edit::Insert(i, s) => {
                let at = i % (len + 1);
                b.splice(at..at, s.iter().copied());
            }
            Edit::Remove(i, n) if len > 0 => {
                let at = i % len;
                b.drain(at..(at + n).min(len));
            }
            Edit::Truncate(i) => b.truncate(i % (len + 1)),
            Edit::Copy(from, to, n) if len > 0 => {
                let (from, to) = (from % len, to % len);
                let n = (*n).min(len - from).min(len - to);
                b.copy_within(from..from + n, to);
            }
            _ => {}
        }
    }
    b
}
