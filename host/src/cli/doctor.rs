//! `teamhost doctor`: what confinement this machine gives teammates, one
//! line per check (like `brew doctor`, `flutter doctor`): `ok` or
//! `missing`, what it means for a teammate, and how to get it. The probes
//! are the ones the host itself uses at run time (`tools::confine`,
//! `tools::seccomp`, `tools::cgroup`), so the answer is the run's.
//!
//! | check | used for |
//! |---|---|
//! | home | where teams, logs and the compile cache go |
//! | landlock | Bash calls confined to the teammate's directory |
//! | seccomp | Bash calls kept from the system calls that escape |
//! | cgroups | a Bash call's process tree bounded in processes and memory |
//! | namespaces | a Bash call in its own PID, mount and IPC namespaces |
//! | tmux | `--teammate-mode tmux` (a pane per teammate) |
//! | nats-server | a team shared across hosts (`--store nats://…`) |
//! | wasm32-wasip2 | building Rust teammates (`rustup target add`) |
//! | claude-code | WebAssembly teammates in a Claude Code team; names the Claude Code versions teamhost is tested with ([`TESTED_CLAUDE_CODE`]) |
//!
//! Missing parts are not errors: the host runs without them (Bash is then
//! less confined, or refused, as `docs/guides` say); the exit status is 0.

use std::process::{Command, Stdio};

use clap::Args;
use serde::Serialize;

use super::Output;
use crate::home::Home;
use crate::tools::{cgroup, confine, seccomp};

/// Arguments of `teamhost doctor`.
#[derive(Debug, Args)]
pub struct DoctorArgs {}

/// One check's result.
#[derive(Debug, Serialize)]
struct Check {
    check: &'static str,
    ok: bool,
    /// What was found, or what is missing and what that means.
    detail: String,
    /// How to get it, when missing.
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
    /// What a found one cannot do, and how to get that.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

fn ok(check: &'static str, detail: impl Into<String>) -> Check {
    Check {
        check,
        ok: true,
        detail: detail.into(),
        fix: None,
        note: None,
    }
}

fn missing(check: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
    Check {
        check,
        ok: false,
        detail: detail.into(),
        fix: Some(fix.into()),
        note: None,
    }
}

pub(super) fn doctor(home: &Home, out: &Output, _a: DoctorArgs) -> anyhow::Result<()> {
    let checks = vec![
        home_check(home),
        landlock(),
        seccomp_check(),
        cgroups(),
        namespaces(),
        program(
            "tmux",
            &["-V"],
            "a pane per teammate (--teammate-mode tmux)",
            "install tmux (apt install tmux / brew install tmux); without it teammates run in-process or as processes",
        ),
        nats_server(),
        wasm_target(),
        claude_code(),
    ];
    out.print(&checks, || {
        let mut s = String::new();
        for c in &checks {
            s.push_str(&format!(
                "{:<7} {:<13} {}\n",
                if c.ok { "ok" } else { "missing" },
                c.check,
                c.detail
            ));
            if let Some(fix) = &c.fix {
                s.push_str(&format!("{:<21} fix: {fix}\n", ""));
            }
            if let Some(note) = &c.note {
                s.push_str(&format!("{:<21} note: {note}\n", ""));
            }
        }
        s
    })
}

fn home_check(home: &Home) -> Check {
    match home.check_usable() {
        Ok(()) => ok("home", format!("{} is usable", home.root().display())),
        Err(e) => missing(
            "home",
            format!("{e}"),
            "give a writable directory with --home DIR or TEAMHOST_HOME=DIR",
        ),
    }
}

fn landlock() -> Check {
    match confine::kernel_abi() {
        0 => missing(
            "landlock",
            "the kernel has no Landlock: a Bash call is not confined to the teammate's directory by the kernel",
            "use Linux ≥ 5.13 with Landlock enabled (CONFIG_SECURITY_LANDLOCK=y and `landlock` in the lsm= boot parameter)",
        ),
        abi => ok(
            "landlock",
            format!("ABI {abi}: Bash calls confined to the teammate's directory"),
        ),
    }
}

fn seccomp_check() -> Check {
    if seccomp::supported() {
        ok(
            "seccomp",
            "Bash calls kept from the system calls that escape confinement",
        )
    } else {
        missing(
            "seccomp",
            "no seccomp filter on this kernel or architecture (x86-64 and AArch64 have one)",
            "use a kernel built with CONFIG_SECCOMP_FILTER on x86-64 or AArch64",
        )
    }
}

fn cgroups() -> Check {
    match cgroup::kind() {
        Ok(cgroup::CgroupKind::V2) => ok(
            "cgroups",
            "v2, delegated: a Bash call's processes and memory are bounded",
        ),
        Ok(cgroup::CgroupKind::V1 { pids, memory }) => ok(
            "cgroups",
            format!(
                "v1 (pids {}, memory {}): a Bash call's process tree is bounded by what is mounted",
                if pids { "yes" } else { "no" },
                if memory { "yes" } else { "no" }
            ),
        ),
        Err(why) => missing(
            "cgroups",
            format!("{why}: a Bash call's process tree is not bounded in processes or memory"),
            "run teamhost in a delegated cgroup v2, e.g. `systemd-run --user --scope -p Delegate=yes teamhost run team.toml`",
        ),
    }
}

fn namespaces() -> Check {
    if confine::namespaces() {
        ok(
            "namespaces",
            "a Bash call gets its own PID, mount and IPC namespaces",
        )
    } else {
        missing(
            "namespaces",
            "this process may not make PID, mount and IPC namespaces: a Bash call sees the host's processes and /tmp",
            "run teamhost with CAP_SYS_ADMIN (as root, or in a container that grants it); Landlock still confines its files",
        )
    }
}

/// A program on PATH, by its version line.
fn program(name: &'static str, args: &[&str], used_for: &str, fix: &str) -> Check {
    match version_line(name, args) {
        Some(v) => ok(name, format!("{v}: {used_for}")),
        None => missing(name, format!("not on PATH: {used_for} unavailable"), fix),
    }
}

/// nats-server, and whether it can keep a cluster's teams: one before
/// 2.9.21 serves one server's teams, but its replicated streams do not
/// serialise compare-and-swap, so a cluster's teams get one replica.
fn nats_server() -> Check {
    let mut check = program(
        "nats-server",
        &["--version"],
        "teams shared across hosts (--store nats://HOST:PORT)",
        "install nats-server (https://docs.nats.io/running-a-nats-service/introduction/installation) and start it with `nats-server -js`; not needed for teams on one machine",
    );
    let version = check
        .detail
        .split(':')
        .nth(1)
        .and_then(|v| v.split_whitespace().next())
        .unwrap_or("")
        .to_string();
    if check.ok && !crate::store::nats::replicated_cas_safe(&version) {
        check.note = Some(format!(
            "{version} serves one server's teams; a cluster (--store nats://A,B,C) needs \
             nats-server 2.9.21 or newer, whose replicated streams serialise compare-and-swap \
             (nats-io/nats-server#4320): on an older cluster a team's streams get one replica, \
             and a node lost loses them"
        ));
    }
    check
}

fn wasm_target() -> Check {
    let libdir = Command::new("rustc")
        .args(["--print", "target-libdir", "--target", "wasm32-wasip2"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match libdir {
        Some(dir) if std::path::Path::new(&dir).is_dir() => ok(
            "wasm32-wasip2",
            "the Rust target teammates are built for is installed",
        ),
        _ => missing(
            "wasm32-wasip2",
            "the Rust target is not installed: Rust teammates cannot be built here (running built components needs nothing)",
            "rustup target add wasm32-wasip2",
        ),
    }
}

/// The Claude Code versions whose agent-teams protocol teamhost is tested
/// with (the fixtures under `host/tests/fixtures/reference-*`): 2.1.197
/// (unsigned lead entries) and 2.1.332 (signed, `--lead-verify-key`).
pub const TESTED_CLAUDE_CODE: [&str; 2] = ["2.1.197", "2.1.332"];

fn claude_code() -> Check {
    let tested = TESTED_CLAUDE_CODE.join(" and ");
    match version_line("claude", &["--version"]) {
        Some(v) if TESTED_CLAUDE_CODE.iter().any(|t| v.contains(t)) => ok(
            "claude-code",
            format!("{v}: a version teamhost is tested with ({tested}); `teamhost teammate` is its teammate command"),
        ),
        Some(v) => ok(
            "claude-code",
            format!("{v}: not a version teamhost is tested with ({tested}); `teamhost teammate` ignores flags it does not know, with a warning"),
        ),
        None => missing(
            "claude-code",
            format!("`claude` is not on PATH: WebAssembly teammates in a Claude Code team are unavailable (tested with {tested})"),
            "install Claude Code (npm install -g @anthropic-ai/claude-code); not needed for teamhost's own teams",
        ),
    }
}

/// The first line `name args` prints, when it runs.
fn version_line(name: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(name)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().next().unwrap_or(name).trim().to_string();
    Some(crate::protocol::describe::printable_line(&line).into_owned())
}
