//! The `yolo26` binary as a user runs it (issue 19's regressions that only show end to end): a closed pipe, a
//! folder with damaged files and a FIFO, a second run into the same `--out`, `convert` onto its own input and
//! twice to the same bytes. CPU only, 64-px inputs, the bundled checkpoint.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn yolo26() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_yolo26"));
    c.current_dir(repo());
    c
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `yolo26 info | head -c 16`: the closed pipe ends the process quietly (SIGPIPE or success), never a panic.
#[test]
fn cli_closed_pipe_ends_quietly() {
    let mut child = yolo26().arg("info").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut head = [0u8; 16];
    child.stdout.take().unwrap().read_exact(&mut head).unwrap(); // then dropped: the pipe closes
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    use std::os::unix::process::ExitStatusExt;
    assert!(out.status.success() || out.status.signal() == Some(libc::SIGPIPE), "{:?} {stderr}", out.status);
}

/// A folder with good images, damaged files and a FIFO named `.png`: the run completes (no hang), every good image
/// is in `predictions.json`, every bad one is an error entry, the status is 1; a second run goes to `out2`.
#[test]
fn cli_predict_folder_with_damaged_files() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    let good = std::fs::read(repo().join("assets/bus.png")).unwrap();
    std::fs::write(src.join("a.png"), &good).unwrap();
    std::fs::write(src.join("b.png"), &good[..good.len() / 3]).unwrap();
    std::fs::write(src.join("c.jpg"), b"garbage").unwrap();
    let fifo = std::ffi::CString::new(src.join("d.png").to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
    std::fs::write(src.join("e.png"), &good).unwrap();
    let out = dir.path().join("out");
    let run = || {
        let mut c = yolo26();
        c.args(["predict", "--imgsz", "64", "--source"]).arg(&src).arg("--out").arg(&out);
        c.output().unwrap()
    };
    let first = run();
    assert_eq!(first.status.code(), Some(1), "{}", String::from_utf8_lossy(&first.stderr));
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(out.join("predictions.json")).unwrap()).unwrap();
    let entries = json.as_array().unwrap();
    let kinds: Vec<(String, bool)> = entries
        .iter()
        .map(|e| {
            let name = Path::new(e["image"].as_str().unwrap()).file_name().unwrap().to_string_lossy().into_owned();
            (name, e.get("detections").is_some())
        })
        .collect();
    let want = [("a.png", true), ("b.png", false), ("c.jpg", false), ("d.png", false), ("e.png", true)];
    assert_eq!(kinds, want.map(|(n, ok)| (n.to_string(), ok)));
    assert!(entries[3]["error"].as_str().unwrap().contains("FIFO"), "{}", entries[3]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(stderr.contains("b.png") && stderr.contains("3 of 5"), "{stderr}");
    let second = run();
    assert_eq!(second.status.code(), Some(1));
    assert!(dir.path().join("out2/predictions.json").exists());
}

/// `convert` refuses to write onto its input, and converting the same file twice gives the same bytes.
#[test]
fn cli_convert_is_deterministic_and_never_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let pt = repo().join("assets/yolo26n-calib.pt");
    let (a, b) = (dir.path().join("a.safetensors"), dir.path().join("b.safetensors"));
    for out in [&a, &b] {
        let o = yolo26().args(["convert", "--weights"]).arg(&pt).arg("--out").arg(out).output().unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let before = std::fs::read(&a).unwrap();
    let o = yolo26().args(["convert", "--weights"]).arg(&a).arg("--out").arg(&a).output().unwrap();
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("is the input file"));
    assert_eq!(std::fs::read(&a).unwrap(), before);
}
