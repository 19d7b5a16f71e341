//! Regression tests of the weight readers and writers on crafted hostile files (each error must name the tensor
//! key and the file, nothing may allocate beyond what the file justifies), and byte-determinism of the writers.
//! The helpers here build `.pt` archives from hand-written views; the property tests in `fuzz_tests` use them too.

use std::io::Write;
use std::path::Path;

use super::peak_alloc::peak_during;
use super::pickle::op;
use super::pt::read_pt_bytes;
use super::pt_write::Pickler;
use super::safetensors_io::{read_safetensors_bytes, safetensors_bytes};
use super::*;

/// One tensor of a crafted pickle: `_rebuild_tensor_v2(('storage', torch.<storage>, skey, 'cpu', numel), offset,
/// size, stride, ...)` under `key`.
#[derive(Clone, Debug)]
pub(super) struct View {
    pub key: String,
    pub storage: &'static str,
    pub skey: String,
    pub numel: i64,
    pub offset: i64,
    pub size: Vec<i64>,
    pub stride: Vec<i64>,
}

impl View {
    /// A `FloatStorage` view of storage `"0"` under key `w`.
    pub fn float(numel: i64, offset: i64, size: &[i64], stride: &[i64]) -> Self {
        Self {
            key: "model.0.conv.weight".into(),
            storage: "FloatStorage",
            skey: "0".into(),
            numel,
            offset,
            size: size.to_vec(),
            stride: stride.to_vec(),
        }
    }
}

/// The pickle of a plain state_dict `{key: tensor, ...}` of `views`.
pub(super) fn state_dict_pickle(views: &[View]) -> Vec<u8> {
    let mut p = Pickler::default();
    p.op(op::PROTO).out.push(2);
    p.op(op::EMPTY_DICT).op(op::MARK);
    for v in views {
        p.str(&v.key).tensor_view(v.storage, &v.skey, v.numel, v.offset, &v.size, &v.stride);
    }
    p.op(op::SETITEMS).op(op::STOP);
    p.out
}

/// A zip archive of `entries` (names relative to `archive/`), every entry compressed with `method`.
pub(super) fn zip_entries(entries: &[(String, Vec<u8>)], method: zip::CompressionMethod) -> Vec<u8> {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let opts = zip::write::SimpleFileOptions::default().compression_method(method);
    for (name, bytes) in entries {
        zip.start_file(format!("archive/{name}"), opts).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap().into_inner()
}

/// A `.pt` holding the state_dict of `views` and the given storages (`data/<key>` entries).
pub(super) fn crafted_pt(views: &[View], storages: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut entries = vec![("data.pkl".to_string(), state_dict_pickle(views))];
    entries.extend(storages.iter().map(|(k, b)| (format!("data/{k}"), b.clone())));
    zip_entries(&entries, zip::CompressionMethod::Stored)
}

pub(super) fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

const LABEL: &str = "crafted.pt";

/// Reads `bytes` as a `.pt`; the error text and this thread's peak heap use during the read.
fn pt_error(bytes: &[u8]) -> (String, usize) {
    let (r, peak) = peak_during(|| read_pt_bytes(bytes, Path::new(LABEL)));
    match r {
        Ok(m) => panic!("expected an error, got {:?}", m.tensors.keys().collect::<Vec<_>>()),
        Err(e) => (e.to_string(), peak),
    }
}

fn assert_names_key(e: &str, needle: &str) {
    assert!(e.contains(LABEL) && e.contains("'model.0.conv.weight'") && e.contains(needle), "{e}");
}

#[test]
fn pt_4tib_claimed_numel_is_refused_before_allocating() {
    // The issue's 600-byte file: `Vec::with_capacity(numel)` ran before the bounds check (a 4 TiB request, abort).
    let storage = [("0", f32_bytes(&[1.0, 2.0, 3.0, 4.0]))];
    let honest_pid = crafted_pt(&[View::float(4, 0, &[1 << 40], &[1])], &storage);
    assert!(honest_pid.len() < 1024, "{} bytes", honest_pid.len());
    let (e, peak) = pt_error(&honest_pid);
    assert_names_key(&e, "exceeds its storage");
    assert!(peak < 1 << 20, "{peak} bytes allocated");
    // the persistent id itself claims 2^40 elements
    let lying_pid = crafted_pt(&[View::float(1 << 40, 0, &[1 << 40], &[1])], &storage);
    let (e, peak) = pt_error(&lying_pid);
    assert_names_key(&e, "has 16 bytes, expected 4398046511104");
    assert!(peak < 1 << 20, "{peak} bytes allocated");
    // a shape whose element count overflows, and one no tensor can have even when empty
    for size in [vec![1 << 40, 1 << 40, 1 << 40], vec![0, i64::MAX, i64::MAX]] {
        let (e, _) = pt_error(&crafted_pt(&[View::float(4, 0, &size, &[0, 0, 0])], &storage));
        assert_names_key(&e, "larger than any tensor");
    }
}

#[test]
fn pt_stride0_view_is_bounded() {
    let storage = [("0", f32_bytes(&[7.0]))];
    // 2^28 floats (1 GiB) out of a 4-byte storage: refused by the file's expansion budget, nothing allocated.
    let bytes = crafted_pt(&[View::float(1, 0, &[1 << 28], &[0])], &storage);
    let (e, peak) = pt_error(&bytes);
    assert_names_key(&e, "would materialise 1073741824 bytes");
    assert!(peak < 1 << 20, "{peak} bytes allocated");
    // 2^62 elements: was `capacity overflow`
    let (e, _) = pt_error(&crafted_pt(&[View::float(1, 0, &[1 << 62], &[0])], &storage));
    assert_names_key(&e, "larger than any tensor");
    // the budget is per file: many medium broadcasts of one storage add up
    let views: Vec<View> =
        (0..40).map(|i| View { key: format!("t{i}"), ..View::float(1, 0, &[1 << 20], &[0]) }).collect();
    let (r, peak) = peak_during(|| read_pt_bytes(&crafted_pt(&views, &storage), Path::new(LABEL)));
    let e = r.unwrap_err().to_string();
    assert!(e.contains("would materialise") && e.contains("budget"), "{e}");
    assert!(peak <= pt::MIN_BUDGET + (1 << 20), "{peak} bytes allocated");
    // a real broadcast within the budget reads as torch would expand it
    let storage = [("0", f32_bytes(&[1.0, 2.0, 3.0]))];
    let m = read_pt_bytes(&crafted_pt(&[View::float(3, 0, &[2, 3], &[0, 1])], &storage), Path::new(LABEL)).unwrap();
    assert_eq!(m.tensors["model.0.conv.weight"].data, [1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
}

#[test]
fn pt_view_arithmetic_never_overflows() {
    let storage = [("0", f32_bytes(&[0.0; 8]))];
    let cases: [(i64, &[i64], &[i64]); 4] = [
        (i64::MAX, &[1], &[1]),
        (0, &[3, 3], &[i64::MAX, 1]),
        (i64::MAX - 1, &[2], &[i64::MAX]),
        (0, &[2, 2, 2, 2], &[1 << 62, 1 << 62, 1 << 62, 1 << 62]),
    ];
    for (offset, size, stride) in cases {
        let (e, _) = pt_error(&crafted_pt(&[View::float(8, offset, size, stride)], &storage));
        assert_names_key(&e, "exceeds its storage");
    }
    let (e, _) = pt_error(&crafted_pt(&[View::float(8, 0, &[2], &[-1])], &storage));
    assert_names_key(&e, "inconsistent size");
}

#[test]
fn pt_nan_and_inf_weights_name_the_key() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let storage = [("0", f32_bytes(&[0.5, bad, 1.0, 2.0]))];
        let (e, _) = pt_error(&crafted_pt(&[View::float(4, 0, &[2, 2], &[2, 1])], &storage));
        assert_names_key(&e, "non-finite");
    }
    // a float64 value beyond f32's range becomes infinite: refused too
    let v = View { storage: "DoubleStorage", ..View::float(1, 0, &[1], &[1]) };
    let (e, _) = pt_error(&crafted_pt(&[v], &[("0", 1e300f64.to_le_bytes().to_vec())]));
    assert_names_key(&e, "non-finite");
    // integer tensors are not checked (num_batches_tracked stays loadable)
    let v = View { storage: "LongStorage", ..View::float(1, 0, &[], &[]) };
    let m = read_pt_bytes(&crafted_pt(&[v], &[("0", 1000i64.to_le_bytes().to_vec())]), Path::new(LABEL)).unwrap();
    assert_eq!(m.tensors["model.0.conv.weight"].data, [1000.0]);
}

#[test]
fn pt_deflate_bomb_is_refused() {
    let pkl = state_dict_pickle(&[View::float(1, 0, &[1], &[1])]);
    let mut big = pkl.clone();
    big.resize(16 << 20, 0); // 16 MiB behind STOP: deflates to ~16 KiB
    let entries = [("data.pkl".to_string(), big), ("data/0".to_string(), f32_bytes(&[1.0]))];
    let bytes = zip_entries(&entries, zip::CompressionMethod::Deflated);
    assert!(bytes.len() < 1 << 20, "{}", bytes.len());
    let (e, peak) = pt_error(&bytes);
    assert!(e.contains(LABEL) && e.contains("data.pkl") && e.contains("more than"), "{e}");
    assert!(peak < 4 << 20, "{peak} bytes allocated");
    // a deflated archive within the limit reads
    let entries = [("data.pkl".to_string(), pkl), ("data/0".to_string(), f32_bytes(&[1.0]))];
    let m = read_pt_bytes(&zip_entries(&entries, zip::CompressionMethod::Deflated), Path::new(LABEL)).unwrap();
    assert_eq!(m.tensors["model.0.conv.weight"].data, [1.0]);
}

#[test]
fn pt_entry_claiming_more_than_the_archive_is_refused() {
    // The central directory says data.pkl holds 1 GiB: that was reserved up front (capped at 1 GiB, not at the
    // archive's size).
    let mut bytes = crafted_pt(&[View::float(1, 0, &[1], &[1])], &[("0", f32_bytes(&[1.0]))]);
    let name = b"archive/data.pkl";
    let cd = (0..bytes.len() - 46)
        .find(|&i| bytes[i..].starts_with(b"PK\x01\x02") && bytes[i + 46..].starts_with(name))
        .expect("central directory entry of data.pkl");
    bytes[cd + 24..cd + 28].copy_from_slice(&(1u32 << 30).to_le_bytes()); // uncompressed size
    let (e, peak) = pt_error(&bytes);
    assert!(e.contains(LABEL) && e.contains("data.pkl"), "{e}");
    assert!(peak < 1 << 20, "{peak} bytes allocated");
}

#[test]
fn huge_class_ids_in_names_do_not_panic() {
    // names {"18446744073709551615": "a"}: `id + 1` overflowed, then indexed an empty list.
    let mut p = Pickler::default();
    p.op(op::PROTO).out.push(2);
    p.op(op::EMPTY_DICT).op(op::MARK);
    p.str("w").tensor_view("FloatStorage", "0", 1, 0, &[1], &[1]);
    p.str("names").op(op::EMPTY_DICT).op(op::MARK).str(&usize::MAX.to_string()).str("a").op(op::SETITEMS);
    p.op(op::SETITEMS).op(op::STOP);
    let entries = [("data.pkl".to_string(), p.out), ("data/0".to_string(), f32_bytes(&[1.0]))];
    let m = read_pt_bytes(&zip_entries(&entries, zip::CompressionMethod::Stored), Path::new(LABEL)).unwrap();
    assert_eq!(m.names, None);

    let map = small_map();
    let extra = [("names".to_string(), format!("{{\"{}\": \"a\"}}", usize::MAX))];
    let bytes = safetensors_bytes(&WeightMap { names: None, ..map }, Path::new("x"), FileDType::F32, &extra).unwrap();
    let e = read_safetensors_bytes(&bytes, Path::new("n.safetensors")).unwrap_err().to_string();
    assert!(e.contains("n.safetensors") && e.contains("names"), "{e}");
}

#[test]
fn safetensors_nan_inf_and_impossible_shapes_name_the_key() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        let mut map = small_map();
        map.tensors.get_mut("model.0.conv.weight").unwrap().data[2] = bad;
        for dtype in [FileDType::F32, FileDType::F16, FileDType::F64] {
            let bytes = safetensors_bytes(&map, Path::new("x"), dtype, &[]).unwrap();
            let e = read_safetensors_bytes(&bytes, Path::new("bad.safetensors")).unwrap_err().to_string();
            assert!(e.contains("bad.safetensors") && e.contains("'model.0.conv.weight'") && e.contains("non-finite"));
        }
    }
    // an empty tensor whose other dimensions multiply past usize: the crate's own check multiplies 0 first
    let mut header =
        br#"{"t":{"dtype":"F32","shape":[0,4611686018427387904,4611686018427387904],"data_offsets":[0,0]}}"#.to_vec();
    header.resize(header.len().next_multiple_of(8), b' ');
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(&header);
    let e = read_safetensors_bytes(&bytes, Path::new("bad.safetensors")).unwrap_err().to_string();
    assert!(e.contains("bad.safetensors") && e.contains("'t'"), "{e}");
    // a finite f32 that overflows f16 is refused when writing, not written as infinity
    let mut map = small_map();
    map.tensors.get_mut("model.0.conv.bias").unwrap().data[0] = 1e6;
    let e = safetensors_bytes(&map, Path::new("out.safetensors"), FileDType::F16, &[]).unwrap_err().to_string();
    assert!(e.contains("out.safetensors") && e.contains("'model.0.conv.bias'") && e.contains("F16"), "{e}");
    let meta = PtMeta { scale: crate::Scale::N, nc: 2, names: map.names.clone(), train_args: vec![], half: true };
    let e = pt_bytes(&map, &meta).unwrap_err().to_string();
    assert!(e.contains("'model.0.conv.bias'") && e.contains("float16"), "{e}");
}

/// A few tensors of every kind a checkpoint holds, with class names.
pub(super) fn small_map() -> WeightMap {
    let mut map = WeightMap { names: Some(vec!["cat".into(), "dog".into()]), ..Default::default() };
    let t = |shape: Vec<usize>, dtype, data: Vec<f32>| WeightTensor { shape, dtype, data };
    map.tensors.insert("model.0.conv.weight".into(), t(vec![2, 3, 1, 1], FileDType::F32, vec![0.5; 6]));
    map.tensors.insert("model.0.conv.bias".into(), t(vec![2], FileDType::F32, vec![-1.0, 0.25]));
    map.tensors.insert("model.0.bn.running_var".into(), t(vec![2], FileDType::F32, vec![1.0, 2.0]));
    map.tensors.insert("model.0.bn.num_batches_tracked".into(), t(vec![], FileDType::I64, vec![1000.0]));
    map.tensors.insert("model.0.mask".into(), t(vec![3], FileDType::Bool, vec![1.0, 0.0, 1.0]));
    map
}

#[test]
fn writes_are_byte_deterministic() {
    let map = small_map();
    let extra: Vec<(String, String)> =
        ["zeta", "alpha", "mid", "beta", "omega"].iter().map(|k| (k.to_string(), format!("v-{k}"))).collect();
    let a = safetensors_bytes(&map, Path::new("a"), FileDType::F16, &extra).unwrap();
    for _ in 0..8 {
        // every HashMap gets fresh random keys: the old HashMap metadata came out in a different order
        assert_eq!(safetensors_bytes(&map, Path::new("a"), FileDType::F16, &extra).unwrap(), a);
    }
    let (_, meta) = safetensors::SafeTensors::read_metadata(&a).unwrap();
    let meta = meta.metadata().clone().unwrap();
    assert_eq!(meta["names"], r#"["cat","dog"]"#);
    assert_eq!(meta["format"], "pt");
    let header = std::str::from_utf8(&a[8..8 + u64::from_le_bytes(a[..8].try_into().unwrap()) as usize]).unwrap();
    let pos: Vec<usize> = ["alpha", "beta", "format", "mid", "names", "omega", "zeta"]
        .iter()
        .map(|k| header.find(&format!("\"{k}\":")).unwrap_or_else(|| panic!("{k} in {header}")))
        .collect();
    assert!(pos.windows(2).all(|w| w[0] < w[1]), "metadata not sorted: {header}");
    let back = read_safetensors_bytes(&a, Path::new("a")).unwrap();
    assert_eq!(back.names, map.names);
    assert_eq!(back.tensors.len(), map.tensors.len());
    assert_eq!(back.tensors["model.0.bn.num_batches_tracked"].dtype, FileDType::I64);

    let meta = PtMeta { scale: crate::Scale::N, nc: 2, names: map.names.clone(), train_args: vec![], half: false };
    let pt = pt_bytes(&map, &meta).unwrap();
    assert_eq!(pt_bytes(&map, &meta).unwrap(), pt);
}

#[test]
fn write_atomic_replaces_the_file_and_leaves_no_temporary() {
    let dir = std::env::temp_dir().join(format!("yolo26-write-atomic-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("w.safetensors");
    write_atomic(&path, b"first").unwrap();
    write_atomic(&path, b"second").unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second");
    let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, [std::ffi::OsString::from("w.safetensors")]);
    let e = write_atomic(&dir.join("missing/w.pt"), b"x").unwrap_err().to_string();
    assert!(e.contains("w.pt"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn scale_and_class_inference_never_index_empty_shapes() {
    let mut map = WeightMap::default();
    let scalar = WeightTensor { shape: vec![], dtype: FileDType::F32, data: vec![1.0] };
    map.tensors.insert("model.23.cv3.0.2.bias".into(), scalar.clone());
    map.tensors.insert("model.0.conv.weight".into(), scalar);
    assert_eq!(crate::detector::infer_nc(&map), None);
    assert_eq!(crate::detector::infer_scale(&map), None);
    let empty_2d = WeightTensor { shape: vec![1 << 40, 0], dtype: FileDType::F32, data: vec![] };
    map.tensors.insert("model.23.cv3.0.2.bias".into(), empty_2d);
    assert_eq!(crate::detector::infer_nc(&map), None, "a huge class count from an empty tensor");
}
