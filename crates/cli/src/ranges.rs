//! Range-checked argument parsers for clap (`value_parser = ...`): clap's error then names the argument and the
//! value, e.g. `invalid value '2' for '--conf <CONF>': must be in [0, 1]`.

/// The largest `--imgsz` accepted (a 8192² f32 input is 805 MB per image before the network's activations).
pub const MAX_IMGSZ: usize = 8192;

fn number<T: std::str::FromStr>(s: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    s.trim().parse::<T>().map_err(|e| format!("not a number ({e})"))
}

/// A score threshold in `[0, 1]` (`--conf`).
pub fn unit_interval(s: &str) -> Result<f32, String> {
    let v: f32 = number(s)?;
    if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err("must be in [0, 1]".into())
    }
}

/// An IoU threshold in `(0, 1]` (`--iou`).
pub fn iou(s: &str) -> Result<f32, String> {
    let v: f32 = number(s)?;
    if v > 0.0 && v <= 1.0 {
        Ok(v)
    } else {
        Err("must be in (0, 1]".into())
    }
}

/// At least one (`--max-det`).
pub fn positive(s: &str) -> Result<usize, String> {
    match number::<usize>(s)? {
        0 => Err("must be at least 1".into()),
        v => Ok(v),
    }
}

/// A positive multiple of 32 up to [`MAX_IMGSZ`] (`--imgsz`).
pub fn imgsz(s: &str) -> Result<usize, String> {
    let v: usize = number(s)?;
    if v == 0 || !v.is_multiple_of(32) || v > MAX_IMGSZ {
        Err(format!("must be a positive multiple of 32, at most {MAX_IMGSZ}"))
    } else {
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_accept_and_reject() {
        assert_eq!(unit_interval("0.25"), Ok(0.25));
        assert_eq!(unit_interval("1"), Ok(1.0));
        for bad in ["2", "-0.1", "NaN", "x"] {
            assert!(unit_interval(bad).is_err(), "{bad}");
        }
        assert_eq!(iou("0.7"), Ok(0.7));
        for bad in ["0", "1.5", "NaN"] {
            assert!(iou(bad).is_err(), "{bad}");
        }
        assert_eq!(positive("300"), Ok(300));
        assert!(positive("0").is_err());
        assert_eq!(imgsz("640"), Ok(640));
        for bad in ["0", "100", "320000"] {
            assert!(imgsz(bad).is_err(), "{bad}");
        }
    }
}
