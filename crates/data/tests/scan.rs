//! Scanning a split on disk: skip reasons, summary counts, the index cache and its invalidation, data.yaml rules.

use std::path::{Path, PathBuf};

use image::{Rgb, RgbImage};
use yolo26_data::scan::scan_images;
use yolo26_data::{img2label_path, img_files, load_data_yaml, DataSource, Dataset, Split};

fn noise_image(w: u32, h: u32, seed: u32) -> RgbImage {
    RgbImage::from_fn(w, h, |x, y| {
        let v = (x.wrapping_mul(73) ^ y.wrapping_mul(151) ^ seed.wrapping_mul(2654435761)).wrapping_mul(2246822519);
        Rgb([(v >> 8) as u8, (v >> 16) as u8, (v >> 24) as u8])
    })
}

fn write(p: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, bytes).unwrap();
}

/// A split with one image of every kind of problem.
fn make_split(root: &Path) -> PathBuf {
    let im = root.join("images/train");
    let lb = root.join("labels/train");
    std::fs::create_dir_all(&im).unwrap();
    std::fs::create_dir_all(&lb).unwrap();
    noise_image(64, 48, 1).save(im.join("a_ok.png")).unwrap();
    write(&lb.join("a_ok.txt"), b"0 0.5 0.5 0.25 0.5\n1 0.2 0.2 0.1 0.1\n");
    noise_image(40, 30, 2).save(im.join("b_background.png")).unwrap(); // no label file
    noise_image(40, 30, 3).save(im.join("c_empty.png")).unwrap();
    write(&lb.join("c_empty.txt"), b"");
    noise_image(40, 30, 4).save(im.join("d_badlabel.png")).unwrap();
    write(&lb.join("d_badlabel.txt"), b"0 0.5 0.5 0.2 0.2\n0 0.5 1.5 0.2 0.2\n");
    write(&im.join("e_corrupt.jpg"), b"\xff\xd8\xff\xe0 this is not a jpeg");
    noise_image(8, 30, 5).save(im.join("f_tiny.png")).unwrap();
    noise_image(40, 30, 6).save(im.join("g_dups.png")).unwrap();
    write(&lb.join("g_dups.txt"), b"1 0.5 0.5 0.2 0.2\n1 0.5 0.5 0.2 0.2\n");
    // a JPEG without its FF D9 end marker: kept with a warning, never rewritten
    let mut jpg = Vec::new();
    noise_image(64, 64, 7).write_to(&mut std::io::Cursor::new(&mut jpg), image::ImageFormat::Jpeg).unwrap();
    assert!(jpg.ends_with(&[0xFF, 0xD9]));
    jpg.truncate(jpg.len() - 2);
    write(&im.join("h_truncated.jpg"), &jpg);
    write(&lb.join("h_truncated.txt"), b"2 0.5 0.5 0.5 0.5\n");
    jpg.truncate(jpg.len() / 2);
    write(&im.join("i_half.jpg"), &jpg);
    write(&im.join("notes.txt"), b"not an image");
    write(&im.join(".hidden.png"), b"skipped by the glob");
    im
}

#[test]
fn scan_counts_reasons_and_cache() {
    let dir = tempfile::tempdir().unwrap();
    let im = make_split(dir.path());
    let truncated = std::fs::read(im.join("h_truncated.jpg")).unwrap();
    let files = img_files(std::slice::from_ref(&im)).unwrap();
    let names: Vec<String> = files.iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(
        names,
        [
            "a_ok.png",
            "b_background.png",
            "c_empty.png",
            "d_badlabel.png",
            "e_corrupt.jpg",
            "f_tiny.png",
            "g_dups.png",
            "h_truncated.jpg",
            "i_half.jpg"
        ]
    );
    let (recs, s) = scan_images(&files, 3, true);
    assert_eq!((s.total, s.found, s.missing, s.empty, s.corrupt, s.duplicates_removed), (9, 5, 2, 1, 3, 1));
    assert!(!s.from_cache);
    let first = s.first_bad.clone().unwrap();
    assert!(first.contains("d_badlabel.png") && first.contains("line 2") && first.contains("1.5"), "{first}");
    let msg = |n: &str| recs.iter().find(|r| r.im_file.ends_with(n)).unwrap().msg.clone();
    assert!(msg("e_corrupt.jpg").contains("cannot decode"));
    assert!(msg("f_tiny.png").contains("<10 pixels"));
    assert!(msg("g_dups.png").contains("1 duplicate labels removed"));
    assert!(msg("h_truncated.jpg").contains("FF D9"));
    // cut in half: cv2.imdecode (and yolo26_imageio) refuse it; kept, decoded leniently, with a warning
    let m = msg("i_half.jpg");
    assert!(m.contains("FF D9") && m.contains("truncated") && m.contains("decoded leniently"), "{m}");
    assert_eq!(std::fs::read(im.join("h_truncated.jpg")).unwrap(), truncated, "user data never rewritten");
    let line = s.line("train: ");
    assert!(line.contains("5 images, 3 backgrounds, 3 corrupt") && line.contains("d_badlabel.png"), "{line}");
    let cache = dir.path().join("labels/train.yolo26-cache.json");
    assert_eq!(s.cache_file.as_deref(), Some(cache.as_path()));
    assert!(cache.is_file());

    // second scan: from the cache, same records
    let (recs2, s2) = scan_images(&files, 3, true);
    assert!(s2.from_cache);
    assert_eq!(recs2, recs);

    // the dataset keeps the 5 usable images
    let ds = Dataset::from_sources(std::slice::from_ref(&im), vec!["a".into(), "b".into(), "c".into()], true).unwrap();
    assert_eq!(ds.len(), 6);
    assert_eq!(ds.load_image(5).unwrap().dimensions(), (64, 64));
    assert_eq!(ds.entries[0].shape, [48, 64]);
    assert_eq!(ds.entries[0].labels.boxes[0], [0.5, 0.5, 0.25, 0.5]);
    assert_eq!(ds.load_image(0).unwrap().dimensions(), (64, 48));
    assert_eq!(ds.entries[4].labels.cls, [2]); // the truncated JPEG
    assert_eq!(ds.load_image(4).unwrap().dimensions(), (64, 64));

    // edit a label (new size + mtime): rescan with the new labels
    std::thread::sleep(std::time::Duration::from_millis(20));
    write(&dir.path().join("labels/train/a_ok.txt"), b"2 0.5 0.5 0.25 0.5\n");
    let (recs3, s3) = scan_images(&files, 3, true);
    assert!(!s3.from_cache);
    assert_eq!(recs3[0].labels.cls, [2]);
    // touch only (same content, new mtime): rescan
    let (_, s4) = scan_images(&files, 3, true);
    assert!(s4.from_cache);
    let t = filetime::FileTime::from_unix_time(1_700_000_000, 123);
    filetime::set_file_mtime(dir.path().join("labels/train/g_dups.txt"), t).unwrap();
    let (_, s5) = scan_images(&files, 3, true);
    assert!(!s5.from_cache);
    // a different nc invalidates too
    let (_, s6) = scan_images(&files, 4, true);
    assert!(!s6.from_cache);

    // a corrupt cache file is ignored with a warning and replaced
    std::fs::write(&cache, b"{\"format\": \"yolo26-data-index\", \"vers").unwrap();
    let (recs7, s7) = scan_images(&files, 4, true);
    assert!(!s7.from_cache);
    assert!(s7.messages.iter().any(|m| m.contains("ignoring corrupt index cache")), "{:?}", s7.messages);
    assert_eq!(recs7.len(), 9);
    let (_, s8) = scan_images(&files, 4, true);
    assert!(s8.from_cache, "cache rewritten");
    // no temp files left behind
    let left: Vec<_> = std::fs::read_dir(dir.path().join("labels")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn label_paths_follow_img2label_paths() {
    assert_eq!(img2label_path(Path::new("/d/images/x/images/a.b.jpg")), PathBuf::from("/d/images/x/labels/a.b.txt"));
    assert_eq!(img2label_path(Path::new("/d/imgs/a.png")), PathBuf::from("/d/imgs/a.txt"));
}

#[test]
fn data_yaml_rules() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ds");
    let im = make_split(&root);
    std::fs::create_dir_all(root.join("images/val")).unwrap();
    noise_image(32, 32, 9).save(root.join("images/val/v.png")).unwrap();
    // list file with ./ entries relative to the list's directory
    write(&root.join("val_list.txt"), b"./images/val/v.png\n./images/train/a_ok.png\n");
    let y = root.join("data.yaml");
    // relative `path` that does not exist from the CWD: resolved against the yaml dir (our documented deviation)
    write(&y, b"path: ../ds\ntrain: images/train\nval: val_list.txt\nnames: {0: a, 1: b, 2: c}\n");
    let c = load_data_yaml(&y).unwrap();
    assert_eq!(c.names, ["a", "b", "c"]);
    assert_eq!(c.train, vec![std::fs::canonicalize(&im).unwrap()]);
    let val = img_files(&c.val).unwrap();
    assert_eq!(val.len(), 2);
    assert!(val[0].ends_with("images/train/a_ok.png") && val[1].ends_with("images/val/v.png"), "{val:?}");

    // `../` fallback and `validation` rename, nc/names combos
    write(&y, b"train: ../images/train\nvalidation: [images/val]\nnc: 3\n");
    let c = load_data_yaml(&y).unwrap();
    assert_eq!(c.names, ["class_0", "class_1", "class_2"]);
    assert!(c.train[0].ends_with("ds/images/train"), "{:?}", c.train);
    assert!(c.val[0].ends_with("ds/images/val"));
    let err = |text: &str| {
        write(&y, text.as_bytes());
        load_data_yaml(&y).unwrap_err().to_string()
    };
    let e = err("train: a\nval: b\nnames: [x, y]\nnc: 3\n");
    assert!(e.contains("data.yaml") && e.contains("'names' length 2 and 'nc: 3' must match"), "{e}");
    assert!(err("train: a\nnames: [x]\n").contains("'val:' key missing"));
    assert!(err("val: a\nnames: [x]\n").contains("'train:' key missing"));
    assert!(err("train: a\nval: b\n").contains("'names' or 'nc'"));
    assert!(err("train: a\nval: b\nnc: 1.5\n").contains("must be an integer"));
    assert!(err("train: a\nval: b\nnames: {0: x, 2: y}\n").contains("class indices"));
    assert!(err("train: 3\nval: b\nnames: [x]\n").contains("'train' must be"));
    assert!(err("train: [a\n").contains("invalid YAML"));
    // nc as an integer-like string is accepted
    write(&y, b"train: images/train\nval: images/val\nnc: '2'\nnames: [p, q]\n");
    assert_eq!(load_data_yaml(&y).unwrap().names, ["p", "q"]);

    // through DataSource: a split with no usable image errors with the reason
    write(&root.join("bad/images/x.png"), b"garbage");
    write(&y, b"train: bad/images\nval: images/val\nnames: [p]\n");
    let src = DataSource::parse(y.to_str().unwrap(), None).unwrap();
    let e = src.open(Split::Train).unwrap_err().to_string();
    assert!(e.contains("No valid images") && e.contains("x.png") && e.contains("cannot decode"), "{e}");
    let e = src.open(Split::Test).unwrap_err().to_string();
    assert!(e.contains("no 'test' split"), "{e}");
    let e = img_files(&[root.join("nope")]).unwrap_err().to_string();
    assert!(e.contains("nope") && e.contains("does not exist"), "{e}");
}

#[test]
fn coco_json_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let imgs = dir.path().join("imgs");
    std::fs::create_dir_all(&imgs).unwrap();
    noise_image(100, 50, 1).save(imgs.join("1.png")).unwrap();
    noise_image(60, 80, 2).save(imgs.join("2.png")).unwrap();
    noise_image(30, 30, 3).save(imgs.join("3.png")).unwrap();
    let json = serde_json::json!({
        "images": [
            {"id": 42, "file_name": "1.png", "width": 100, "height": 50},
            {"id": 7, "file_name": "2.png", "width": 60, "height": 80},
            {"id": 9, "file_name": "3.png", "width": 30, "height": 30},
            {"id": 10, "file_name": "missing.png", "width": 30, "height": 30},
        ],
        "annotations": [
            {"id": 1, "image_id": 42, "category_id": 90, "bbox": [10, 5, 20, 10], "iscrowd": 0},
            {"id": 2, "image_id": 42, "category_id": 3, "bbox": [0, 0, 100, 50], "iscrowd": 1},
            {"id": 3, "image_id": 7, "category_id": 3, "bbox": [6, 8, 0, 10]},
            {"id": 4, "image_id": 7, "category_id": 17, "bbox": [30, 40, 30, 40]},
        ],
        "categories": [{"id": 90, "name": "toothbrush"}, {"id": 3, "name": "car"}, {"id": 17, "name": "cat"}],
    });
    let jp = dir.path().join("instances.json");
    std::fs::write(&jp, serde_json::to_vec(&json).unwrap()).unwrap();
    let src = DataSource::parse(jp.to_str().unwrap(), Some(&imgs)).unwrap();
    let ds = src.open(Split::Val).unwrap();
    assert_eq!(ds.names, ["car", "cat", "toothbrush"]);
    assert_eq!(src.names().unwrap(), ds.names);
    let info = ds.coco.as_ref().unwrap();
    assert_eq!(info.class_to_category, [3, 17, 90]);
    assert_eq!(info.image_ids, [42, 7, 9]);
    assert_eq!(ds.entries[0].labels.cls, [2]);
    assert_eq!(ds.entries[0].labels.boxes, [[0.2, 0.2, 0.2, 0.2]]);
    assert_eq!(ds.entries[1].labels.cls, [1]);
    assert_eq!(ds.entries[1].labels.boxes, [[0.75, 0.75, 0.5, 0.5]]);
    assert!(ds.entries[2].labels.is_empty());
    assert_eq!((ds.summary.crowd, ds.summary.zero_size, ds.summary.corrupt), (1, 1, 1));
    assert!(ds.summary.first_bad.as_ref().unwrap().contains("missing.png"));
    assert!(DataSource::parse(jp.to_str().unwrap(), None).unwrap_err().to_string().contains("--images"));
    std::fs::write(&jp, br#"{"images": [], "categories": [{"id": 1, "name": "a"}], "annotations": [{"image_id": 5, "category_id": 1, "bbox": [0,0,1,1]}]}"#).unwrap();
    let e = Dataset::from_coco(&jp, &imgs).unwrap_err().to_string();
    assert!(e.contains("instances.json") && e.contains("image_id 5"), "{e}");
}
