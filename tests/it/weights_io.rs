//! Native weight readers/writers: PyTorch `.pt` (ultralytics full-pickle checkpoints and state_dicts) and
//! safetensors, against the fixtures written by `tests/fixtures/gen_pt_cases.py` (expected values in
//! `tests/fixtures/pt/expected.json`), plus the error paths (each must name the file, never panic).

use std::path::{Path, PathBuf};

use yolo26_model::weights::pt::read_pt_bytes;
use yolo26_model::weights::safetensors_io::read_safetensors_bytes;
use yolo26_model::weights::{
    read_pt, read_safetensors, read_weights, write_safetensors, FileDType, WeightMap, WeightTensor, WeightsError,
};
use yolo26_tests::fixture;

fn pt(name: &str) -> PathBuf {
    fixture(&format!("tests/fixtures/pt/{name}"))
}

fn expected() -> serde_json::Value {
    let text = std::fs::read_to_string(pt("expected.json")).expect("expected.json");
    serde_json::from_str(&text).expect("expected.json parses")
}

fn dtype_name(d: FileDType) -> &'static str {
    match d {
        FileDType::F64 => "F64",
        FileDType::F32 => "F32",
        FileDType::F16 => "F16",
        FileDType::BF16 => "BF16",
        FileDType::I64 => "I64",
        FileDType::I32 => "I32",
        FileDType::U8 => "U8",
        FileDType::Bool => "Bool",
    }
}

/// Exact comparison of every key, shape, dtype and value with the generator's description of `case`.
fn check_against_expected(map: &WeightMap, case: &str) {
    let exp = expected();
    let exp = &exp[case];
    let tensors = exp["tensors"].as_object().unwrap_or_else(|| panic!("no expected tensors for {case}"));
    let got_keys: Vec<&String> = map.tensors.keys().collect();
    let mut exp_keys: Vec<&String> = tensors.keys().collect();
    exp_keys.sort();
    assert_eq!(got_keys, exp_keys, "{case}: key set");
    for (key, e) in tensors {
        let t = &map.tensors[key];
        let shape: Vec<usize> = e["shape"].as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
        assert_eq!(t.shape, shape, "{case}: {key} shape");
        assert_eq!(dtype_name(t.dtype), e["dtype"].as_str().unwrap(), "{case}: {key} dtype");
        let values: Vec<f64> = e["values"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(t.data.len(), values.len(), "{case}: {key} numel");
        for (i, (&g, &w)) in t.data.iter().zip(&values).enumerate() {
            // Every fixture value is exactly representable in f32 (f16/bf16/f32 data, small ints, 2.5 as f64), so the
            // comparison is exact; going through f32 absorbs serde_json's default (not always correctly rounded)
            // float parsing, which can be 1 f64-ulp off.
            assert_eq!(g, w as f32, "{case}: {key}[{i}]");
        }
    }
    let names: Option<Vec<String>> = match &exp["names"] {
        serde_json::Value::Null => None,
        v => Some(v.as_array().unwrap().iter().map(|s| s.as_str().unwrap().to_string()).collect()),
    };
    assert_eq!(map.names, names, "{case}: names");
}

/// A file in a per-process temp directory, removed when dropped (the empty directory stays: tests run in parallel).
struct TempFile(PathBuf);

impl std::ops::Deref for TempFile {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TempFile {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn temp_path(name: &str) -> TempFile {
    let dir = std::env::temp_dir().join(format!("yolo26-weights-io-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    TempFile(dir.join(name))
}

fn err_text(r: Result<WeightMap, WeightsError>) -> String {
    match r {
        Ok(m) => panic!("expected an error, got {} tensors from {:?}", m.tensors.len(), m.source),
        Err(e) => e.to_string(),
    }
}

// ------------------------------------------------------------------------------------------------ readers

#[test]
fn ultralytics_half_checkpoint() {
    let path = pt("ultra_half.pt");
    let map = read_pt(&path).unwrap();
    check_against_expected(&map, "ultra_half.pt");
    assert_eq!(map.source, path);
    // the exact state_dict keys: non-persistent buffer, None parameter and plain attributes are not there
    assert!(!map.tensors.contains_key("model.2.anchors"));
    assert!(!map.tensors.contains_key("model.2.unused"));
    assert!(map.tensors.contains_key("model.2.strides"));
    assert!(map.tensors.contains_key("model.2.cv.1.0.bn.num_batches_tracked"));
    assert_eq!(map.tensors["model.0.conv.weight"].shape, vec![4, 3, 3, 3]);
    assert_eq!(map.tensors["model.0.conv.weight"].dtype, FileDType::F16);
    assert_eq!(map.tensors["model.0.bn.num_batches_tracked"].dtype, FileDType::I64);
    assert_eq!(map.tensors["model.0.bn.num_batches_tracked"].data, vec![1000.0]);
    assert_eq!(map.names.as_deref(), Some(&["cat".to_string(), "dog".into(), "traffic light".into()][..]));
}

#[test]
fn ultralytics_ema_checkpoint_protocol4() {
    let map = read_pt(&pt("ultra_ema.pt")).unwrap();
    check_against_expected(&map, "ultra_ema.pt");
}

#[test]
fn plain_and_nested_state_dicts() {
    let plain = read_pt(&pt("plain_sd.pt")).unwrap();
    check_against_expected(&plain, "plain_sd.pt");
    assert_eq!(plain.tensors["model.0.conv.weight"].dtype, FileDType::F32);
    let nested = read_pt(&pt("nested_sd.pt")).unwrap();
    check_against_expected(&nested, "nested_sd.pt");
    assert_eq!(plain.tensors, nested.tensors);
    // the half checkpoint holds the same weights rounded to f16
    let half_map = read_pt(&pt("ultra_half.pt")).unwrap();
    for (k, t) in &plain.tensors {
        let h = &half_map.tensors[k];
        assert_eq!(h.shape, t.shape, "{k}");
        for (a, b) in t.data.iter().zip(&h.data) {
            if t.dtype == FileDType::F32 {
                assert_eq!(half::f16::from_f32(*a).to_f32(), *b, "{k}");
            } else {
                assert_eq!(a, b, "{k}");
            }
        }
    }
}

#[test]
fn views_strides_offsets_and_dtypes() {
    let map = read_pt(&pt("views.pt")).unwrap();
    check_against_expected(&map, "views.pt");
    let t = &map.tensors["transposed"]; // arange(6).reshape(2,3).t()
    assert_eq!(t.shape, vec![3, 2]);
    assert_eq!(t.data, vec![0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
    let v = &map.tensors["offset_view"]; // (arange(40)*0.5-3)[7:19].view(3,4)
    assert_eq!(v.data[0], 0.5);
    assert_eq!(map.tensors["scalar"].shape, Vec::<usize>::new());
    assert_eq!(map.tensors["scalar"].data, vec![2.5]);
    assert_eq!(map.tensors["empty"].shape, vec![0, 3]);
    assert!(map.tensors["empty"].data.is_empty());
    assert_eq!(map.tensors["bool"].data, vec![1.0, 0.0, 1.0]);
    assert_eq!(map.tensors["i64"].dtype, FileDType::I64);
    assert_eq!(map.tensors["bf16"].dtype, FileDType::BF16);
    assert_eq!(map.tensors["param"].data, vec![0.25, -0.75]);
}

#[test]
fn safetensors_from_python() {
    let map = read_safetensors(&pt("plain_sd.safetensors")).unwrap();
    check_against_expected(&map, "plain_sd.safetensors");
    let from_pt = read_pt(&pt("plain_sd.pt")).unwrap();
    assert_eq!(map.tensors, from_pt.tensors);
}

#[test]
fn read_weights_dispatches_on_content() {
    for name in ["ultra_half.pt", "ultra_ema.pt", "plain_sd.pt", "nested_sd.pt", "views.pt", "plain_sd.safetensors"] {
        let a = read_weights(&pt(name)).unwrap();
        let b = if name.ends_with(".pt") { read_pt(&pt(name)) } else { read_safetensors(&pt(name)) }.unwrap();
        assert_eq!(a.tensors, b.tensors, "{name}");
        assert_eq!(a.names, b.names, "{name}");
    }
    // the extension does not matter
    let st_as_bin = temp_path("weights_st.bin");
    std::fs::copy(pt("plain_sd.safetensors"), &st_as_bin).unwrap();
    let pt_as_st = temp_path("weights_pt.safetensors");
    std::fs::copy(pt("ultra_half.pt"), &pt_as_st).unwrap();
    assert_eq!(read_weights(&st_as_bin).unwrap().tensors.len(), read_pt(&pt("plain_sd.pt")).unwrap().tensors.len());
    check_against_expected(&read_weights(&pt_as_st).unwrap(), "ultra_half.pt");
}

// ------------------------------------------------------------------------------------------------ writer

#[test]
fn safetensors_round_trip_f16_and_f32() {
    let src = read_pt(&pt("ultra_half.pt")).unwrap();
    let out = temp_path("round_trip_f16.safetensors");
    write_safetensors(&src, &out, FileDType::F16).unwrap();
    let back = read_safetensors(&out).unwrap();
    assert_eq!(back.tensors, src.tensors, "f16 → f16 is exact, integers stay I64");
    assert_eq!(back.names, src.names);
    assert_eq!(back.tensors["model.0.bn.num_batches_tracked"].dtype, FileDType::I64);

    let plain = read_pt(&pt("plain_sd.pt")).unwrap();
    let out32 = temp_path("round_trip_f32.safetensors");
    write_safetensors(&plain, &out32, FileDType::F32).unwrap();
    let back32 = read_safetensors(&out32).unwrap();
    assert_eq!(back32.tensors, plain.tensors);
    assert_eq!(back32.names, None);

    // f32 → f16 rounds like torch's .half()
    let out16 = temp_path("plain_as_f16.safetensors");
    write_safetensors(&plain, &out16, FileDType::F16).unwrap();
    let back16 = read_safetensors(&out16).unwrap();
    for (k, t) in &back16.tensors {
        let h = &src.tensors[k];
        assert_eq!(t.dtype, h.dtype, "{k}");
        assert_eq!(t.data, h.data, "{k}");
    }

    // other dtypes survive: bf16 written as F32 keeps its values, bool/u8/i32 keep their dtype
    let views = read_pt(&pt("views.pt")).unwrap();
    let outv = temp_path("views.safetensors");
    write_safetensors(&views, &outv, FileDType::F32).unwrap();
    let backv = read_safetensors(&outv).unwrap();
    for (k, t) in &views.tensors {
        let b = &backv.tensors[k];
        assert_eq!((&b.shape, &b.data), (&t.shape, &t.data), "{k}");
        let want = match t.dtype {
            FileDType::F64 | FileDType::F16 | FileDType::BF16 => FileDType::F32,
            d => d,
        };
        assert_eq!(b.dtype, want, "{k}");
    }
}

#[test]
fn write_rejects_inconsistent_tensor() {
    let mut map = WeightMap::default();
    map.tensors
        .insert("bad.weight".into(), WeightTensor { shape: vec![2, 3], dtype: FileDType::F32, data: vec![0.0; 5] });
    let out = temp_path("bad.safetensors");
    let e = write_safetensors(&map, &out, FileDType::F16).unwrap_err().to_string();
    assert!(e.contains("bad.safetensors") && e.contains("bad.weight"), "{e}");
    let e = write_safetensors(&map, &out, FileDType::I64).unwrap_err().to_string();
    assert!(e.contains("bad.safetensors"), "{e}");
}

// ------------------------------------------------------------------------------------------------ errors

#[test]
fn missing_file() {
    let p = PathBuf::from("/nonexistent/dir/no_such_weights.pt");
    for e in [err_text(read_pt(&p)), err_text(read_safetensors(&p)), err_text(read_weights(&p))] {
        assert!(e.contains("no_such_weights.pt"), "{e}");
    }
}

#[test]
fn truncated_zip_every_length() {
    let path = pt("ultra_half.pt");
    let bytes = std::fs::read(&path).unwrap();
    let label = Path::new("cut/ultra_half_cut.pt");
    for n in 0..bytes.len() {
        let e = err_text(read_pt_bytes(&bytes[..n], label));
        assert!(e.contains("ultra_half_cut.pt"), "{n}: {e}");
    }
    // and through the file-based entry points
    let cut = temp_path("truncated.pt");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).unwrap();
    for e in [err_text(read_pt(&cut)), err_text(read_weights(&cut))] {
        assert!(e.contains("truncated.pt") && e.contains("zip"), "{e}");
    }
}

#[test]
fn truncated_safetensors() {
    let bytes = std::fs::read(pt("plain_sd.safetensors")).unwrap();
    let label = Path::new("cut.safetensors");
    for n in 0..bytes.len() {
        let e = match read_safetensors_bytes(&bytes[..n], label) {
            Ok(_) => panic!("{n} bytes parsed"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains("cut.safetensors"), "{n}: {e}");
    }
}

#[test]
fn model_is_not_a_module() {
    let p = pt("not_module.pt");
    for e in [err_text(read_pt(&p)), err_text(read_weights(&p))] {
        assert!(e.contains("not_module.pt") && e.contains("'model'") && e.contains("str"), "{e}");
    }
}

#[test]
fn corrupted_pickle() {
    for (name, needle) in [("corrupt_pickle.pt", "truncated"), ("bad_opcode.pt", "unknown opcode 0xff")] {
        let e = err_text(read_pt(&pt(name)));
        assert!(e.contains(name) && e.contains("data.pkl") && e.contains(needle), "{e}");
    }
}

#[test]
fn missing_storage_names_the_key() {
    let e = err_text(read_pt(&pt("missing_storage.pt")));
    assert!(e.contains("missing_storage.pt") && e.contains("model.0.conv.weight") && e.contains("data/1"), "{e}");
}

#[test]
fn legacy_and_unknown_formats() {
    let e = err_text(read_weights(&pt("legacy.pt")));
    assert!(e.contains("legacy.pt") && e.contains("legacy") && e.contains("re-save"), "{e}");
    let txt = temp_path("not_weights.txt");
    std::fs::write(&txt, "hello, these are not weights\n").unwrap();
    let e = err_text(read_weights(&txt));
    assert!(e.contains("not_weights.txt") && e.contains("unrecognised"), "{e}");
    let e = err_text(read_pt(&txt));
    assert!(e.contains("not_weights.txt") && e.contains("zip"), "{e}");
    let e = err_text(read_safetensors(&pt("ultra_half.pt")));
    assert!(e.contains("ultra_half.pt") && e.contains("safetensors"), "{e}");
    let empty = temp_path("empty.pt");
    std::fs::write(&empty, b"").unwrap();
    let e = err_text(read_weights(&empty));
    assert!(e.contains("empty.pt"), "{e}");
}

#[test]
fn corrupted_bytes_never_panic() {
    // Flip bytes all over a valid checkpoint; whatever happens must be Ok or Err naming the file, not a panic.
    let bytes = std::fs::read(pt("ultra_half.pt")).unwrap();
    let label = Path::new("flipped.pt");
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for _ in 0..2000 {
        let mut b = bytes.clone();
        for _ in 0..4 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let i = (s % b.len() as u64) as usize;
            b[i] ^= (s >> 32) as u8 | 1;
        }
        if let Err(e) = read_pt_bytes(&b, label) {
            assert!(e.to_string().contains("flipped.pt"), "{e}");
        }
    }
}

/// `yolo26 convert --out X.pt`: the ultralytics checkpoint written here reads back with this project's reader
/// (every tensor exact in f32, f16-rounded with `--half`, the class names, the BatchNorm counters added), is a
/// stored zip in `torch.save`'s layout, and refuses non-finite weights naming the tensor. That ultralytics itself
/// loads it (`YOLO("X.pt")`, strict `load_state_dict`, same tensors) is checked by
/// `scripts/check_pt_in_ultralytics.py` (needs torch + ultralytics; run 2026-12-04 with torch 2.15,
/// ultralytics 8.4.190: 708/708 keys, max difference 0 in f32, 2.1e-3 in f16).
#[test]
fn pt_writer_round_trip() {
    use yolo26_model::weights::{pt_bytes, PtMeta};
    use yolo26_model::{Scale, Yolo26Config};
    let dev = Default::default();
    let model = Yolo26Config::new(Scale::N, 3).init::<burn::backend::Flex>(&dev);
    let mut map = yolo26_model::load::collect_weights(&model);
    map.names = Some(vec!["a".into(), "b".into(), "c".into()]);
    let meta = PtMeta { scale: Scale::N, nc: 3, names: map.names.clone(), train_args: Vec::new(), half: false };
    let bytes = pt_bytes(&map, &meta).expect("pt bytes");
    let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes[..])).unwrap();
    let names: Vec<String> = zip.file_names().map(str::to_string).collect();
    for n in ["archive/data.pkl", "archive/byteorder", "archive/version", "archive/data/0"] {
        assert!(names.iter().any(|x| x == n), "{n} missing from {names:?}");
    }
    for i in 0..zip.len() {
        assert_eq!(zip.by_index(i).unwrap().compression(), zip::CompressionMethod::Stored);
    }
    let back = read_pt_bytes(&bytes, Path::new("x.pt")).expect("reads back");
    assert_eq!(back.names, map.names);
    for (k, t) in &map.tensors {
        let b = back.tensors.get(k).unwrap_or_else(|| panic!("{k} missing"));
        assert_eq!((&b.shape, &b.data), (&t.shape, &t.data), "{k}");
    }
    let extra: Vec<&String> = back.tensors.keys().filter(|k| !map.tensors.contains_key(*k)).collect();
    assert!(extra.iter().all(|k| k.ends_with(".num_batches_tracked")), "{extra:?}");

    let half = pt_bytes(&map, &PtMeta { half: true, ..meta.clone() }).unwrap();
    let back = read_pt_bytes(&half, Path::new("x.pt")).unwrap();
    for (k, t) in &map.tensors {
        let b = &back.tensors[k];
        for (x, y) in b.data.iter().zip(&t.data) {
            assert_eq!(*x, half::f16::from_f32(*y).to_f32(), "{k}");
        }
    }

    let mut bad = map.clone();
    let key = "model.0.conv.weight".to_string();
    bad.tensors.get_mut(&key).unwrap().data[3] = f32::NAN;
    let e = pt_bytes(&bad, &meta).unwrap_err().to_string();
    assert!(e.contains(&key) && e.contains("NaN"), "{e}");
    let e = pt_bytes(&map, &PtMeta { nc: 4, ..meta }).unwrap_err().to_string();
    assert!(e.contains("3 class names") && e.contains("4 classes"), "{e}");
}
