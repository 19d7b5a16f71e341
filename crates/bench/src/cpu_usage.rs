//! Where a multi-threaded benchmark's CPU time goes (Linux `/proc/self/task/*/stat` and `getrusage`): CPU seconds
//! per thread-name group, page faults and context switches between two snapshots. Used by `bench-loader` to tell
//! apart a loader whose workers idle (a serial stage) from one whose per-image CPU cost grows with the thread count
//! (shared cores / memory bandwidth) or whose time goes into the kernel (page faults, `munmap`).

use std::collections::BTreeMap;

/// A snapshot of the process's CPU accounting.
#[derive(Clone, Debug, Default)]
pub struct CpuSnapshot {
    /// `(user, system)` CPU seconds per thread-name group (the name up to its last `-` + digits, e.g.
    /// `yolo26-data-worker`), summed over the threads alive at the snapshot.
    pub groups: BTreeMap<String, (f64, f64)>,
    /// Whole-process `getrusage(RUSAGE_SELF)`: user and system seconds (threads that exited included).
    pub user: f64,
    pub sys: f64,
    /// Minor / major page faults, voluntary / involuntary context switches.
    pub minflt: i64,
    pub majflt: i64,
    pub nvcsw: i64,
    pub nivcsw: i64,
}

fn group_name(comm: &str) -> String {
    comm.trim_end_matches(|c: char| c.is_ascii_digit()).trim_end_matches('-').to_string()
}

impl CpuSnapshot {
    /// The current counters (empty groups where `/proc` cannot be read).
    pub fn now() -> Self {
        let mut s = Self::default();
        // SAFETY: `ru` is a valid, writable rusage; RUSAGE_SELF is valid.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } == 0 {
            let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
            s.user = tv(ru.ru_utime);
            s.sys = tv(ru.ru_stime);
            s.minflt = ru.ru_minflt;
            s.majflt = ru.ru_majflt;
            s.nvcsw = ru.ru_nvcsw;
            s.nivcsw = ru.ru_nivcsw;
        }
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
        if let Ok(dir) = std::fs::read_dir("/proc/self/task") {
            for e in dir.flatten() {
                let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else { continue };
                // pid (comm) state ...: comm may hold spaces, so split at the last ')'.
                let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
                let comm = &stat[open + 1..close];
                let rest: Vec<&str> = stat[close + 1..].split_whitespace().collect();
                // rest[0] is field 3 (state): utime = field 14, stime = field 15.
                let (Some(u), Some(k)) = (rest.get(11), rest.get(12)) else { continue };
                let (u, k) = (u.parse::<f64>().unwrap_or(0.0) / hz, k.parse::<f64>().unwrap_or(0.0) / hz);
                let g = s.groups.entry(group_name(comm)).or_default();
                g.0 += u;
                g.1 += k;
            }
        }
        s
    }

    /// What happened between `earlier` and `self`, as JSON (seconds, counts).
    pub fn since(&self, earlier: &Self) -> serde_json::Value {
        let groups: serde_json::Map<String, serde_json::Value> = self
            .groups
            .iter()
            .map(|(k, &(u, s))| {
                let (u0, s0) = earlier.groups.get(k).copied().unwrap_or((0.0, 0.0));
                (k.clone(), serde_json::json!({ "user_s": u - u0, "sys_s": s - s0 }))
            })
            .collect();
        serde_json::json!({
            "user_s": self.user - earlier.user,
            "sys_s": self.sys - earlier.sys,
            "minor_faults": self.minflt - earlier.minflt,
            "major_faults": self.majflt - earlier.majflt,
            "voluntary_switches": self.nvcsw - earlier.nvcsw,
            "involuntary_switches": self.nivcsw - earlier.nivcsw,
            "threads": groups,
        })
    }
}
