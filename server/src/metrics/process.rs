//! The standard process metrics of Prometheus client libraries, read from Linux's /proc:
//! `process_open_fds`, `process_max_fds`, `process_resident_memory_bytes`,
//! `process_virtual_memory_bytes`, `process_cpu_seconds_total`, `process_start_time_seconds`.
//! A value /proc does not give (another OS, a restricted /proc) is left out, never invented.

use std::fmt::Write as _;

use super::expo::{Kind, header};

/// Clock ticks per second of /proc's time fields: the kernel's USER_HZ, fixed at 100 in the
/// user-space ABI of every architecture this server is built for (x86, arm, riscv, ppc, s390).
const USER_HZ: f64 = 100.0;

fn field_kb(status: &str, key: &str) -> Option<u64> {
    let line = status.lines().find(|l| l.starts_with(key))?;
    line[key.len()..].split_whitespace().next()?.parse().ok()
}

/// Fields of /proc/self/stat after the command name (which may contain spaces): index 0 is
/// the state (field 3 of proc(5)).
fn stat_fields(stat: &str) -> Option<Vec<&str>> {
    let after = &stat[stat.rfind(')')? + 1..];
    Some(after.split_whitespace().collect())
}

/// Appends the process families to `out`.
pub fn render(out: &mut String) {
    let mut put = |name: &str, kind: Kind, help: &str, value: Option<f64>| {
        if let Some(v) = value {
            header(out, name, kind, help);
            let _ = writeln!(out, "{name} {v}");
        }
    };
    let fds = std::fs::read_dir("/proc/self/fd").ok().map(|d| d.count() as f64);
    put("process_open_fds", Kind::Gauge, "Number of open file descriptors.", fds);
    let max_fds = std::fs::read_to_string("/proc/self/limits").ok().and_then(|l| {
        let line = l.lines().find(|l| l.starts_with("Max open files"))?;
        line["Max open files".len()..].split_whitespace().next()?.parse::<f64>().ok()
    });
    put("process_max_fds", Kind::Gauge, "Maximum number of open file descriptors.", max_fds);
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss = field_kb(&status, "VmRSS:").map(|kb| (kb * 1024) as f64);
    put("process_resident_memory_bytes", Kind::Gauge, "Resident memory size in bytes.", rss);
    let vsz = field_kb(&status, "VmSize:").map(|kb| (kb * 1024) as f64);
    put("process_virtual_memory_bytes", Kind::Gauge, "Virtual memory size in bytes.", vsz);
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields = stat_fields(&stat).unwrap_or_default();
    // proc(5): utime is field 14, stime 15, starttime 22; fields[0] is field 3.
    let ticks = |field: usize| fields.get(field - 3).and_then(|v| v.parse::<f64>().ok());
    let cpu = ticks(14).zip(ticks(15)).map(|(u, s)| (u + s) / USER_HZ);
    put("process_cpu_seconds_total", Kind::Counter, "Total user and system CPU time spent in seconds.", cpu);
    let boot = std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|s| s.lines().find_map(|l| l.strip_prefix("btime ")).and_then(|v| v.trim().parse::<f64>().ok()));
    let start = boot.zip(ticks(22)).map(|(b, t)| b + t / USER_HZ);
    put("process_start_time_seconds", Kind::Gauge, "Start time of the process since unix epoch in seconds.", start);
}

#[cfg(test)]
mod tests {
    #[test]
    fn reads_this_process() {
        let mut out = String::new();
        super::render(&mut out);
        for name in ["process_open_fds ", "process_resident_memory_bytes ", "process_start_time_seconds "] {
            let line = out.lines().find(|l| l.starts_with(name)).unwrap_or_else(|| panic!("{name} in {out}"));
            let v: f64 = line[name.len()..].parse().unwrap();
            assert!(v > 0.0, "{line}");
        }
        let start: f64 =
            out.lines().find_map(|l| l.strip_prefix("process_start_time_seconds ")).unwrap().parse().unwrap();
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs_f64();
        assert!(start <= now + 1.0 && start > now - 86_400.0 * 365.0, "{start} vs {now}");
    }
}
