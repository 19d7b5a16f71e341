//! Where `predict` writes: the output directory (ultralytics `increment_path`: `runs/predict`, `runs/predict2`, …
//! unless `--exist-ok`), never inside the source, and files written atomically (a temporary file in the same
//! directory, renamed over the final name) so an interrupted run never leaves a torn image or JSON.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

/// The annotated copies keep their file names, so an output directory equal to the source directory (or to a
/// source file's directory), or inside the source directory, would overwrite or mix with the inputs: refused.
pub fn refuse_writing_into_source(source: &Path, out: &Path) -> anyhow::Result<()> {
    let src = source.canonicalize().with_context(|| format!("--source {}", source.display()))?;
    let src_dir = if src.is_dir() { src.clone() } else { src.parent().map(Path::to_path_buf).unwrap_or(src.clone()) };
    // `out` may not exist yet: resolve its deepest existing ancestor, then append the rest
    let abs = std::path::absolute(out).with_context(|| format!("--out {}", out.display()))?;
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        match (existing.parent(), existing.file_name()) {
            (Some(p), Some(name)) => {
                rest.push(name.to_os_string());
                existing = p;
            }
            _ => break,
        }
    }
    let mut resolved = existing.canonicalize().unwrap_or_else(|_| existing.to_path_buf());
    resolved.extend(rest.iter().rev());
    if resolved == src_dir || (src.is_dir() && resolved.starts_with(&src)) {
        bail!(
            "--out {} would write into the source {} (annotated copies keep the input file names); choose another \
             directory",
            out.display(),
            source.display()
        );
    }
    Ok(())
}

/// Creates and returns the output directory: `out` itself when it does not exist yet (or with `exist_ok`), else
/// the first of `out2`, `out3`, … that does not exist (ultralytics `increment_path(path, exist_ok, sep="")`).
/// The directory is claimed with `create_dir`, so two runs started together never share one.
pub fn claim_output_dir(out: &Path, exist_ok: bool) -> anyhow::Result<PathBuf> {
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    }
    if exist_ok {
        std::fs::create_dir_all(out).with_context(|| format!("cannot create --out {}", out.display()))?;
        return Ok(out.to_path_buf());
    }
    let name = out.file_name().with_context(|| format!("--out {}: not a directory name", out.display()))?;
    for n in 1..10_000u32 {
        let candidate =
            if n == 1 { out.to_path_buf() } else { out.with_file_name(format!("{}{n}", name.to_string_lossy())) };
        match std::fs::create_dir(&candidate) {
            Ok(()) => return Ok(candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", candidate.display())),
        }
    }
    bail!("--out {}: {0}2 … {0}9999 all exist; pass --exist-ok or another --out", out.display())
}

/// Saves `img` as `path` (format from its extension) through a temporary file in the same directory and a
/// rename, so `path` is either absent or complete.
pub fn save_image_atomic(img: &image::RgbImage, path: &Path) -> anyhow::Result<()> {
    let format = image::ImageFormat::from_path(path)
        .with_context(|| format!("{}: no image format for this extension", path.display()))?;
    let name = path.file_name().with_context(|| format!("{}: not a file path", path.display()))?;
    let tmp = path.with_file_name(format!(".{}.tmp{}", name.to_string_lossy(), std::process::id()));
    let result = img
        .save_with_format(&tmp, format)
        .map_err(anyhow::Error::from)
        .and_then(|()| std::fs::rename(&tmp, path).map_err(anyhow::Error::from));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--out` equal to the source directory, inside it, or equal to a source file's directory is refused (also
    /// when spelled differently or not yet existing); a sibling directory is accepted.
    #[test]
    fn predict_never_writes_into_its_source() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        let src = root.join("images");
        std::fs::create_dir_all(&src).unwrap();
        let file = src.join("a.png");
        std::fs::write(&file, b"not read here").unwrap();
        assert!(refuse_writing_into_source(&src, &src).is_err());
        assert!(refuse_writing_into_source(&src, &src.join(".")).is_err());
        assert!(refuse_writing_into_source(&src, &src.join("new/deeper")).is_err());
        assert!(refuse_writing_into_source(&file, &root.join("images/../images")).is_err());
        assert!(refuse_writing_into_source(&src, &root.join("out")).is_ok());
        assert!(refuse_writing_into_source(&file, &root.join("out")).is_ok());
    }

    /// `runs/predict` → `runs/predict2` → `runs/predict3` as ultralytics numbers them; `--exist-ok` reuses the
    /// directory; a file in the way is an error naming it.
    #[test]
    fn output_dirs_are_numbered_like_ultralytics() {
        let root = tempfile::tempdir().unwrap();
        let out = root.path().join("runs/predict");
        assert_eq!(claim_output_dir(&out, false).unwrap(), out);
        assert_eq!(claim_output_dir(&out, false).unwrap(), root.path().join("runs/predict2"));
        assert_eq!(claim_output_dir(&out, false).unwrap(), root.path().join("runs/predict3"));
        assert_eq!(claim_output_dir(&out, true).unwrap(), out);
        let file = root.path().join("runs/file");
        std::fs::write(&file, b"x").unwrap();
        let e = claim_output_dir(&file, true).unwrap_err();
        assert!(format!("{e:#}").contains("runs/file"), "{e:#}");
    }

    /// An image is written whole under its final name and no temporary file is left behind; an unknown extension
    /// is an error naming the path.
    #[test]
    fn annotated_images_are_written_atomically() {
        let dir = tempfile::tempdir().unwrap();
        let img = image::RgbImage::from_fn(5, 3, |x, y| image::Rgb([x as u8 * 40, y as u8 * 80, 7]));
        let path = dir.path().join("a.png");
        save_image_atomic(&img, &path).unwrap();
        assert_eq!(image::open(&path).unwrap().to_rgb8(), img);
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.png")]);
        let e = save_image_atomic(&img, &dir.path().join("a.unknown")).unwrap_err();
        assert!(format!("{e:#}").contains("a.unknown"), "{e:#}");
    }
}
