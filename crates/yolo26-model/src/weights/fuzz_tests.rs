//! Property-based fuzzing of the weight readers (`cargo test --release ... fuzz_`): mutated real files (torch-written
//! fixtures, this crate's writers), mutated pickles re-packed into valid archives, generated tensor views checked
//! against an independent oracle, generated safetensors headers and arbitrary bytes. Every run uses a fixed seed
//! and a bounded number of cases (a few seconds per target in release), so failures reproduce exactly.
//!
//! Properties: no panic; an error names the file; a map that reads has `data.len() == numel(shape)` and only finite
//! floats; the reader's peak heap use stays within [`ALLOC_FACTOR`]× the input plus [`ALLOC_FLOOR`].

use std::path::Path;
use std::sync::OnceLock;

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::Index;
use yolo26_fuzzkit::{config, edit, mutate, Edit};

use super::peak_alloc::peak_during;
use super::pt::read_pt_bytes;
use super::safetensors_io::{read_safetensors_bytes, safetensors_bytes};
use super::tests::{crafted_pt, small_map, zip_entries, View};
use super::*;

/// Heap bytes a reader may use per input byte (the pickle tree: at most 16 values of ~56 bytes per input byte)...
const ALLOC_FACTOR: usize = 1024;
/// ...plus the fixed floors: the `.pt` expansion budget, the unpickler's minimum limits, zip bookkeeping.
const ALLOC_FLOOR: usize = 40 << 20;

const LABEL: &str = "fuzzed.weights";

type Reader = fn(&[u8], &Path) -> Result<WeightMap, WeightsError>;

/// Reads `bytes` with `read` and checks the properties above.
fn check(read: Reader, bytes: &[u8]) {
    let (r, peak) = peak_during(|| read(bytes, Path::new(LABEL)));
    let limit = bytes.len() * ALLOC_FACTOR + ALLOC_FLOOR;
    assert!(peak <= limit, "{peak} bytes allocated reading {} bytes", bytes.len());
    match r {
        Ok(m) => {
            for (k, t) in &m.tensors {
                assert_eq!(checked_numel(&t.shape), Some(t.data.len()), "{k}: shape {:?}", t.shape);
                assert!(!t.dtype.is_float() || t.data.iter().all(|v| v.is_finite()), "{k}: non-finite value");
            }
        }
        Err(e) => assert!(e.to_string().contains(LABEL), "{e}"),
    }
}

/// Real `.pt` files: torch-written fixtures (views, a full-module f16 checkpoint, a protocol-4 EMA checkpoint) and
/// this crate's own writer.
fn pt_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let map = small_map();
        let meta = PtMeta { scale: crate::Scale::N, nc: 2, names: map.names.clone(), train_args: vec![], half: true };
        vec![
            include_bytes!("../../../../tests/fixtures/pt/views.pt").to_vec(),
            include_bytes!("../../../../tests/fixtures/pt/ultra_half.pt").to_vec(),
            include_bytes!("../../../../tests/fixtures/pt/ultra_ema.pt").to_vec(),
            pt_bytes(&map, &meta).unwrap(),
        ]
    })
}

/// The entries of a seed archive (names without the top folder), the pickle first.
fn unzip(bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut z = zip::ZipArchive::new(std::io::Cursor::new(bytes)).unwrap();
    let mut out = Vec::new();
    for i in 0..z.len() {
        let mut f = z.by_index(i).unwrap();
        let name = f.name().split_once('/').map_or(f.name(), |(_, rest)| rest).to_string();
        let mut data = Vec::new();
        std::io::Read::read_to_end(&mut f, &mut data).unwrap();
        out.push((name, data));
    }
    out.sort_by_key(|(n, _)| n != "data.pkl");
    out
}

fn safetensors_seeds() -> &'static [Vec<u8>] {
    static SEEDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    SEEDS.get_or_init(|| {
        let map = small_map();
        vec![
            include_bytes!("../../../../tests/fixtures/pt/plain_sd.safetensors").to_vec(),
            safetensors_bytes(&map, Path::new(LABEL), FileDType::F16, &[]).unwrap(),
            safetensors_bytes(&map, Path::new(LABEL), FileDType::F32, &[("k".into(), "v".into())]).unwrap(),
        ]
    })
}

/// A small `i64` most of the time, an edge value sometimes.
fn int(small: std::ops::Range<i64>) -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => small,
        1 => prop_oneof![Just(-1i64), Just(1 << 40), Just(1 << 62), Just(i64::MAX), Just(i64::MIN), any::<i64>()],
    ]
}

/// Storage classes of the generated views: name, element size.
const STORAGES: [(&str, usize); 7] = [
    ("FloatStorage", 4),
    ("HalfStorage", 2),
    ("BFloat16Storage", 2),
    ("DoubleStorage", 8),
    ("LongStorage", 8),
    ("ByteStorage", 1),
    ("BoolStorage", 1),
];

/// Element `k` of a generated storage (small integers: exact in every dtype; 0/1 for bool) and its bytes.
fn element(kind: usize, k: usize) -> (f32, Vec<u8>) {
    let v = if kind == 6 { (k % 2) as f32 } else { k as f32 };
    let b = match kind {
        0 => v.to_le_bytes().to_vec(),
        1 => half::f16::from_f32(v).to_le_bytes().to_vec(),
        2 => half::bf16::from_f32(v).to_le_bytes().to_vec(),
        3 => (v as f64).to_le_bytes().to_vec(),
        4 => (v as i64).to_le_bytes().to_vec(),
        _ => vec![v as u8],
    };
    (v, b)
}

/// What a correct reader must do with a view.
#[derive(Debug)]
enum Expect {
    /// Read exactly these storage indices, row-major.
    Values(Vec<usize>),
    /// Refuse it.
    Error,
    /// Too large for the oracle to enumerate (the budget may apply): anything but a panic.
    Either,
}

/// Independent oracle: enumerates every index of the view with wide arithmetic.
fn oracle(storage_elems: usize, claim: i64, offset: i64, size: &[i64], stride: &[i64]) -> Expect {
    if offset < 0 || size.iter().chain(stride).any(|&v| v < 0) || (claim >= 0 && claim as u128 > storage_elems as u128)
    {
        return Expect::Error;
    }
    let nonzero: u128 = size.iter().fold(1u128, |a, &d| a.saturating_mul(d.max(1) as u128));
    if nonzero > (isize::MAX as u128) / 8 {
        return Expect::Error;
    }
    if size.contains(&0) {
        return Expect::Values(Vec::new());
    }
    if nonzero > 4096 {
        return Expect::Either;
    }
    let mut out = Vec::new();
    let mut idx = vec![0i64; size.len()];
    for _ in 0..nonzero {
        let pos = idx.iter().zip(stride).fold(offset as u128, |a, (&i, &s)| a + i as u128 * s as u128);
        if pos >= storage_elems as u128 {
            return Expect::Error;
        }
        out.push(pos as usize);
        for d in (0..size.len()).rev() {
            idx[d] += 1;
            if idx[d] < size[d] {
                break;
            }
            idx[d] = 0;
        }
    }
    Expect::Values(out)
}

/// A safetensors header entry: dtype index, shape, and data offsets (`None`: those that fit, after the previous).
fn tensor_spec() -> impl Strategy<Value = (usize, Vec<i64>, Option<(i64, i64)>)> {
    let offsets = prop_oneof![4 => Just(None), 1 => (int(0..64), int(0..64)).prop_map(Some)];
    (0usize..12, vec(int(0..5), 0..4), offsets)
}

proptest! {
    #![proptest_config(config(20_000))]

    /// Whole-file mutations of real `.pt` files (zip structure, CRCs, names, data).
    #[test]
    fn fuzz_pt_mutated_archive(seed in any::<Index>(), edits in vec(edit(b"."), 1..6)) {
        let seeds = pt_seeds();
        check(read_pt_bytes, &mutate(seeds[seed.index(seeds.len())].as_slice(), &edits));
    }

    /// Mutations of one entry (mostly the pickle) of a real `.pt`, re-packed so the zip layer accepts it.
    #[test]
    fn fuzz_pt_mutated_pickle(
        seed in any::<Index>(),
        entry in prop_oneof![3 => Just(None), 1 => any::<Index>().prop_map(Some)],
        edits in vec(edit(b"."), 1..6),
    ) {
        let seeds = pt_seeds();
        let mut entries = unzip(&seeds[seed.index(seeds.len())]);
        let i = entry.map_or(0, |e| e.index(entries.len()));
        entries[i].1 = mutate(&entries[i].1, &edits);
        check(read_pt_bytes, &zip_entries(&entries, zip::CompressionMethod::Stored));
    }

    /// Generated views (offsets, sizes, strides, claimed element counts, dtypes) against the oracle.
    #[test]
    fn fuzz_pt_views(
        kind in 0..STORAGES.len(),
        elems in 0usize..48,
        claim in prop_oneof![2 => Just(None), 1 => int(0..64).prop_map(Some)],
        offset in int(0..16),
        dims in vec((int(0..6), int(0..8)), 0..5),
    ) {
        let (storage, _) = STORAGES[kind];
        let (values, bytes): (Vec<f32>, Vec<Vec<u8>>) = (0..elems).map(|k| element(kind, k)).unzip();
        let claim = claim.unwrap_or(elems as i64);
        let (size, stride): (Vec<i64>, Vec<i64>) = dims.into_iter().unzip();
        let view = View { storage, ..View::float(claim, offset, &size, &stride) };
        let file = crafted_pt(&[view], &[("0", bytes.concat())]);
        check(read_pt_bytes, &file);
        let r = read_pt_bytes(&file, Path::new(LABEL));
        match (oracle(elems, claim, offset, &size, &stride), r) {
            (Expect::Values(idx), Ok(m)) => {
                let t = &m.tensors["model.0.conv.weight"];
                let want: Vec<f32> = idx.iter().map(|&i| values[i]).collect();
                prop_assert_eq!(&t.data, &want);
                prop_assert_eq!(t.shape.iter().map(|&d| d as i64).collect::<Vec<_>>(), size);
            }
            (Expect::Error, Err(e)) => prop_assert!(e.to_string().contains("'model.0.conv.weight'"), "{}", e),
            (Expect::Either, _) => {}
            (want, got) => {
                return Err(TestCaseError::fail(format!("oracle {want:?}, reader {:?}", got.map(|m| m.tensors))));
            }
        }
    }

    /// Whole-file mutations of safetensors files (header JSON, length prefix, data).
    #[test]
    fn fuzz_safetensors_mutated(seed in any::<Index>(), edits in vec(edit(b"."), 1..6)) {
        let seeds = safetensors_seeds();
        check(read_safetensors_bytes, &mutate(seeds[seed.index(seeds.len())].as_slice(), &edits));
    }

    /// Generated safetensors headers: dtypes (valid and not), shapes with huge and zero dimensions, data offsets that
    /// fit the shapes (mostly) or not, `names` metadata of every shape, data of the right length or not.
    #[test]
    fn fuzz_safetensors_header(
        tensors in vec(tensor_spec(), 0..4),
        names in 0usize..5,
        extra in prop_oneof![4 => Just(0i64), 1 => int(-8..8)],
        fill in any::<u8>(),
    ) {
        const DTYPES: [(&str, usize); 12] = [
            ("F32", 4), ("F16", 2), ("BF16", 2), ("F64", 8), ("I64", 8), ("I32", 4), ("U8", 1), ("BOOL", 1), ("I8", 1),
            ("F8_E4M3", 1), ("U64", 8), ("X", 1),
        ];
        let mut header = serde_json::Map::new();
        let names = [r#"["a","b"]"#, r#"{"0":"a","1":"b"}"#, r#"{"18446744073709551615":"a"}"#, "[1]", "{"][names];
        header.insert("__metadata__".into(), serde_json::json!({ "names": names }));
        let mut end = 0i64;
        for (name, (dtype, shape, offsets)) in tensors.into_iter().enumerate() {
            let (dtype, esize) = DTYPES[dtype];
            let numel = shape.iter().try_fold(1i64, |a, &d| a.checked_mul(d)).unwrap_or(i64::MAX);
            let (start, stop) = offsets.unwrap_or((end, end.saturating_add(numel.saturating_mul(esize as i64))));
            end = stop.max(end);
            header.insert(
                format!("t{name}"),
                serde_json::json!({ "dtype": dtype, "shape": shape, "data_offsets": [start, stop] }),
            );
        }
        let json = serde_json::to_vec(&header).unwrap();
        let mut bytes = (json.len() as u64).to_le_bytes().to_vec();
        bytes.extend_from_slice(&json);
        let data_len = end.saturating_add(extra).clamp(0, 1 << 16) as usize;
        bytes.resize(bytes.len() + data_len, fill);
        check(read_safetensors_bytes, &bytes);
    }

    /// Arbitrary bytes, bare or behind each format's magic, through both readers.
    #[test]
    fn fuzz_weights_arbitrary_bytes(prefix in 0usize..3, body in vec(any::<u8>(), 0..1024)) {
        let mut bytes = match prefix {
            0 => Vec::new(),
            1 => b"PK\x03\x04".to_vec(),
            _ => [&(body.len() as u64).to_le_bytes()[..], b"{"].concat(),
        };
        bytes.extend_from_slice(&body);
        check(read_pt_bytes, &bytes);
        check(read_safetensors_bytes, &bytes);
    }
}

/// Minimised failures the targets above found in the readers before this hardening, replayed exactly.
#[test]
fn fuzz_regressions() {
    // fuzz_pt_mutated_archive: one XOR in the zip directory of a 2.4 KB `.pt` (this crate's writer, f16) made the
    // entry claim ~1 GiB, which `read_entry` reserved up front (peak 1,073,770,973 bytes).
    let bytes = mutate(&pt_seeds()[3], &[Edit::Xor(9234388249438607461, 3)]);
    check(read_pt_bytes, &bytes);
    // fuzz_safetensors_header: `names` {"18446744073709551615": "a"} overflowed `id + 1` and indexed an empty list.
    let json = br#"{"__metadata__":{"names":"{\"18446744073709551615\":\"a\"}"}}"#;
    let bytes = [&(json.len() as u64).to_le_bytes()[..], json].concat();
    check(read_safetensors_bytes, &bytes);
    // fuzz_pt_views aborted on the first view of 2^40 elements (`Vec::with_capacity` before the bounds check) and
    // fuzz_pt_mutated_pickle / fuzz_safetensors_mutated accepted NaN weights: see the crafted cases in `tests`.
}
