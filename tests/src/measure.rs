//! Small helpers the benchmarks share: durations for a table, this
//! process's resident memory, and the machine's description.

use std::time::Duration;

/// `d` in µs, ms or s, whichever reads best.
pub fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us < 1_000.0 {
        format!("{us:.1} µs")
    } else if us < 1_000_000.0 {
        format!("{:.2} ms", us / 1e3)
    } else {
        format!("{:.2} s", us / 1e6)
    }
}

/// Resident set size of this process, in KiB (Linux).
pub fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS in /proc/self/status")
}

/// The machine, as the benchmarks print it: cores, CPU model, memory.
pub fn machine() -> String {
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("model name"))
                .map(|v| v.trim_start_matches([' ', '\t', ':']).to_string())
        })
        .unwrap_or_default();
    let mem = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .unwrap_or(0);
    format!(
        "{cpus} cores ({model}), {:.0} GiB",
        mem as f64 / 1024.0 / 1024.0
    )
}

/// Proportional set size of this process, in KiB (Linux,
/// `/proc/self/smaps_rollup`): a page shared by n mappings counts 1/n in
/// each. What the process really holds, where [`rss_kib`] counts a page
/// once per mapping: wasmtime maps a component's initial memory image into
/// every instance, so a thousand instances reading one page of it count a
/// thousand pages in VmRSS and one in PSS.
pub fn pss_kib() -> u64 {
    let rollup =
        std::fs::read_to_string("/proc/self/smaps_rollup").expect("/proc/self/smaps_rollup");
    rollup
        .lines()
        .find_map(|l| l.strip_prefix("Pss:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("Pss in /proc/self/smaps_rollup")
}

/// Prints this process's resident memory by mapping (anonymous ones by
/// size) to stderr, the largest 15: where idle teammates' memory is
/// (`SCALE_SMAPS=1` in the `scale` bench, `MODEL_SMAPS=1` in `model`).
/// A linear memory shows as `/memfd:wasm-memory-image` (its data) between
/// two anonymous mappings (its stack and its heap).
pub fn print_smaps() {
    let text = std::fs::read_to_string("/proc/self/smaps").unwrap_or_default();
    let mut by: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    let mut current = String::new();
    for line in text.lines() {
        let first = line.split_whitespace().next().unwrap_or("");
        if first.contains('-') && first.chars().next().is_some_and(|c| c.is_ascii_hexdigit()) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (a, b) = first.split_once('-').unwrap();
            let size =
                u64::from_str_radix(b, 16).unwrap_or(0) - u64::from_str_radix(a, 16).unwrap_or(0);
            current = match fields.get(5) {
                Some(name) => name.to_string(),
                None => format!("[anon {} KiB]", size >> 10),
            };
            by.entry(current.clone()).or_default().1 += 1;
        } else if let Some(v) = line.strip_prefix("Rss:") {
            let kib: u64 = v.trim().trim_end_matches("kB").trim().parse().unwrap_or(0);
            by.entry(current.clone()).or_default().0 += kib;
        }
    }
    let mut v: Vec<_> = by.into_iter().collect();
    v.sort_by_key(|b| std::cmp::Reverse(b.1 .0));
    for (name, (kib, n)) in v.iter().take(15) {
        eprintln!("{kib:>9} KiB  {n:>6} maps  {name}");
    }
}
