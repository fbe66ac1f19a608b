//! Builds the example teammate components in `guests/` for `wasm32-wasip2` and
//! writes `$OUT_DIR/guests.rs`: one path constant per guest, which `src/lib.rs`
//! includes (wasmtime's `crates/test-programs/artifacts/build.rs` does the
//! same for its test programs).
//!
//! The guests are their own cargo workspace, built by a nested `cargo build`
//! into `<target dir>/guests`, next to the outer build's profile directories:
//!
//! - never into the outer profile directory itself: the outer cargo holds its
//!   lock while this script runs, so the nested cargo would wait for ever;
//! - not into `OUT_DIR` either: that path changes with every build
//!   configuration, and each one would rebuild the guests from scratch.
//!
//! The nested build gets a clean environment: the variables cargo sets for
//! this script (target, profile, flags, package metadata) describe the host
//! build and would break or slow a wasm build.
//!
//! The Python and JavaScript guests (`guests/python/*`, `guests/js/*`) are
//! built too, by `scripts/build-polyglot` into `<target dir>/guests/polyglot`,
//! when the tools `scripts/polyglot-toolchain` installs under
//! `target/polyglot` are there (`scripts/test` installs them). Their path
//! constants are written either way; without the tools the components are
//! missing, and `teamhost_tests::polyglot::component` fails the test that
//! wants one unless `TEAMHOST_NO_POLYGLOT=1` says to skip it.

use std::env;
use std::ffi::OsString;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{self, Command};

const WASM_TARGET: &str = "wasm32-wasip2";

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let repo = manifest_dir
        .parent()
        .expect("tests/ is inside the repository");
    let guests_dir = repo.join("guests");
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));

    // A directory makes cargo rerun this script when any file below it changes.
    println!("cargo:rerun-if-changed={}", guests_dir.display());
    println!("cargo:rerun-if-changed={}", repo.join("wit").display());

    let rustc = env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
    require_wasm_target(&rustc);

    let target_dir = guests_target_dir(&out_dir);
    let guests = guest_names(&guests_dir);
    build_guests(&guests_dir, &target_dir);

    let release_dir = target_dir.join(WASM_TARGET).join("release");
    let mut code = String::new();
    let mut all = String::new();
    for name in &guests {
        let wasm = release_dir.join(format!("{}.wasm", name.replace('-', "_")));
        if !wasm.is_file() {
            fail(&format!(
                "the guest build succeeded but {} is missing: is guests/{name} a \
                 `crate-type = [\"cdylib\"]` library?",
                wasm.display()
            ));
        }
        let constant = name.to_uppercase().replace('-', "_");
        writeln!(
            code,
            "/// The `{name}` component (`guests/{name}`), built for `{WASM_TARGET}`."
        )
        .unwrap();
        writeln!(
            code,
            "pub const {constant}: &str = {:?};",
            wasm.display().to_string()
        )
        .unwrap();
        writeln!(all, "    ({name:?}, {constant}),").unwrap();
    }
    writeln!(
        code,
        "/// Every guest: `(crate name, path to its component)`, by name."
    )
    .unwrap();
    writeln!(code, "pub const ALL: &[(&str, &str)] = &[\n{all}];").unwrap();
    code += &polyglot_guests(repo, &guests_dir, &target_dir.join("polyglot"));
    fs::write(out_dir.join("guests.rs"), code).expect("write guests.rs");
}

/// The Python and JavaScript guests: builds them when their toolchain is
/// installed, and returns the code of their path constants (`ECHO_PY`,
/// `WORKER_JS`, `WORKER_QJS`, …, then `POLYGLOT` listing them all and
/// `POLYGLOT_MISSING`, why they were not built).
fn polyglot_guests(repo: &Path, guests_dir: &Path, out: &Path) -> String {
    // (directory under guests/, component suffixes, what builds it)
    const LANGUAGES: &[(&str, &[&str], &str)] = &[
        ("python", &["py"], "componentize-py"),
        (
            "js",
            &["js", "qjs"],
            "componentize-js (js), jco's QuickJS backend (qjs)",
        ),
    ];
    let tools = repo.join("target").join("polyglot");
    let stamp = tools.join("installed.stamp");
    println!(
        "cargo:rerun-if-changed={}",
        repo.join("scripts/build-polyglot").display()
    );
    println!(
        "cargo:rerun-if-changed={}",
        repo.join("scripts/polyglot").display()
    );
    println!("cargo:rerun-if-env-changed=TEAMHOST_NO_POLYGLOT");
    // Rerun once the toolchain is installed (or reinstalled): watch its
    // stamp when there is one, else the directory it will appear in (made
    // here, so that a missing path does not rerun this script every time).
    if stamp.is_file() {
        println!("cargo:rerun-if-changed={}", stamp.display());
    } else {
        let _ = fs::create_dir_all(&tools);
        println!("cargo:rerun-if-changed={}", tools.display());
    }

    let missing = if stamp.is_file() {
        build_polyglot(repo, out);
        None
    } else {
        let why = "the Python and JavaScript toolchains are not installed";
        println!(
            "cargo:warning=not building guests/python and guests/js: {why}; run \
             scripts/polyglot-toolchain (scripts/test does), then build again"
        );
        Some(why)
    };

    let mut code = String::new();
    let mut all = String::new();
    for (dir, suffixes, tool) in LANGUAGES {
        for name in guest_dirs(&guests_dir.join(dir)) {
            for suffix in *suffixes {
                let file = format!("{name}-{suffix}");
                let constant = file.to_uppercase().replace('-', "_");
                let wasm = out.join(format!("{file}.wasm"));
                writeln!(
                    code,
                    "/// The `{name}` guest of `guests/{dir}/{name}`, built by {tool}; \
                     [`polyglot::component`] checks that it was built."
                )
                .unwrap();
                writeln!(
                    code,
                    "pub const {constant}: &str = {:?};",
                    wasm.display().to_string()
                )
                .unwrap();
                writeln!(all, "    ({file:?}, {constant}),").unwrap();
            }
        }
    }
    writeln!(
        code,
        "/// Every Python and JavaScript guest: `(name-suffix, path)`."
    )
    .unwrap();
    writeln!(code, "pub const POLYGLOT: &[(&str, &str)] = &[\n{all}];").unwrap();
    writeln!(
        code,
        "/// Why the Python and JavaScript guests were not built (`None`: they were).\n\
         pub const POLYGLOT_MISSING: Option<&str> = {missing:?};"
    )
    .unwrap();
    code
}

/// The guests of one language: the directories of `dir` (none when it does
/// not exist).
fn guest_dirs(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().is_dir())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

/// Runs `scripts/build-polyglot --out OUT`: it rebuilds only the components
/// whose sources, `wit/` or toolchain changed, so this is quick when nothing
/// did.
fn build_polyglot(repo: &Path, out: &Path) {
    let script = repo.join("scripts").join("build-polyglot");
    let mut cmd = Command::new(&script);
    cmd.arg("--out").arg(out);
    eprintln!("running: {cmd:?}");
    let output = cmd
        .output()
        .unwrap_or_else(|e| fail(&format!("cannot run {}: {e}", script.display())));
    // Its report (what was built, in how long) shows with `cargo build -vv`.
    eprint!("{}", String::from_utf8_lossy(&output.stdout));
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    if !output.status.success() {
        fail(&format!(
            "building the Python and JavaScript guests failed ({}); the output \
             above says why. To reproduce: scripts/build-polyglot",
            output.status
        ));
    }
}

/// Fail with a clear message when the standard library for the wasm target is
/// not installed (rustc still prints where it would be).
fn require_wasm_target(rustc: &OsString) {
    let output = Command::new(rustc)
        .args(["--print", "target-libdir", "--target", WASM_TARGET])
        .output();
    let installed = match output {
        Ok(out) if out.status.success() => {
            Path::new(String::from_utf8_lossy(&out.stdout).trim()).is_dir()
        }
        _ => false,
    };
    if !installed {
        fail(&format!(
            "the Rust target `{WASM_TARGET}` is not installed, and the teammate \
             components in guests/ are built for it.\n       \
             Install it with:  rustup target add {WASM_TARGET}"
        ));
    }
}

/// `<target dir>/guests`, derived from `OUT_DIR`, which cargo puts at
/// `<target dir>[/<triple>]/<profile>/build/<package>-<hash>/out`.
fn guests_target_dir(out_dir: &Path) -> PathBuf {
    let profile_dir = out_dir
        .ancestors()
        .find(|dir| dir.parent().and_then(Path::file_name) == Some("build".as_ref()))
        .and_then(Path::parent) // <profile>/build
        .and_then(Path::parent); // <profile>
    let Some(mut base) = profile_dir.and_then(Path::parent) else {
        // An unfamiliar layout: build inside OUT_DIR, slower but never a
        // deadlock.
        return out_dir.join("guests");
    };
    // `cargo build --target <triple>` adds a level.
    if env::var_os("TARGET").is_some_and(|t| base.file_name() == Some(t.as_os_str())) {
        base = base.parent().unwrap_or(base);
    }
    base.join("guests")
}

/// The guest crates: the directories of `guests/` that hold a `Cargo.toml`.
fn guest_names(guests_dir: &Path) -> Vec<String> {
    let entries = fs::read_dir(guests_dir)
        .unwrap_or_else(|e| fail(&format!("cannot read {}: {e}", guests_dir.display())));
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.path().join("Cargo.toml").is_file())
        .filter_map(|entry| entry.file_name().into_string().ok())
        .collect();
    names.sort();
    names
}

fn build_guests(guests_dir: &Path, target_dir: &Path) {
    let cargo = env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // From guests/, so that guests/.cargo/config.toml applies as it does when
    // a person runs `cargo build` there.
    cmd.current_dir(guests_dir)
        .arg("build")
        .arg("--release")
        .arg("--target")
        .arg(WASM_TARGET)
        .arg("--manifest-path")
        .arg(guests_dir.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(target_dir);
    for (key, _) in env::vars_os() {
        let Some(key) = key.to_str() else { continue };
        if breaks_nested_build(key) {
            cmd.env_remove(key);
        }
    }
    eprintln!("running: {cmd:?}");
    let status = cmd
        .status()
        .unwrap_or_else(|e| fail(&format!("cannot run cargo to build the guests: {e}")));
    if !status.success() {
        fail(&format!(
            "building the guests failed ({status}); the output above says why. \
             To reproduce: cd {} && cargo build --release",
            guests_dir.display()
        ));
    }
}

/// Variables set for this build script (or by the person running the outer
/// build) that describe the host build and must not leak into the wasm one.
/// Kept: where cargo lives and how it reaches registries (`CARGO_HOME`,
/// `CARGO_NET_*`, `CARGO_HTTP_*`, `CARGO_REGISTRIES_*`), its terminal settings,
/// and the jobserver (`CARGO_MAKEFLAGS`), so the nested build shares the outer
/// build's job slots instead of doubling the load.
fn breaks_nested_build(key: &str) -> bool {
    const KEEP_PREFIXES: &[&str] = &[
        "CARGO_HOME",
        "CARGO_MAKEFLAGS",
        "CARGO_NET_",
        "CARGO_HTTP_",
        "CARGO_REGISTRIES_",
        "CARGO_REGISTRY_",
        "CARGO_TERM_",
    ];
    const REMOVE: &[&str] = &[
        // Compiler flags for the host target (`-C target-cpu=native`,
        // coverage instrumentation, …).
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        // `cargo clippy` and similar wrappers of the outer workspace.
        "RUSTC_WORKSPACE_WRAPPER",
        // Build-script variables describing the host build.
        "TARGET",
        "HOST",
        "OUT_DIR",
        "OPT_LEVEL",
        "PROFILE",
        "DEBUG",
        "NUM_JOBS",
        "RUSTC_LINKER",
    ];
    if key.starts_with("CARGO_") {
        // CARGO_ENCODED_RUSTFLAGS, CARGO_TARGET_DIR, CARGO_BUILD_*,
        // CARGO_PROFILE_*, CARGO_CFG_*, CARGO_FEATURE_*, CARGO_PKG_*,
        // CARGO_MANIFEST_*, CARGO_PRIMARY_PACKAGE, …
        return !KEEP_PREFIXES.iter().any(|keep| key.starts_with(keep));
    }
    REMOVE.contains(&key)
}

fn fail(message: &str) -> ! {
    eprintln!("\nerror: {message}\n");
    process::exit(1);
}
