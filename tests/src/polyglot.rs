//! The Python and JavaScript guests for the end-to-end tests: whether a test
//! gets the component it asks for, is skipped, or fails.
//!
//! The build script writes one path constant per guest and engine
//! ([`crate::WORKER_PY`], [`crate::WORKER_JS`], [`crate::WORKER_QJS`], …),
//! built by `scripts/build-polyglot` when the tools `scripts/polyglot-toolchain`
//! installs are there. A test that needs one calls [`component`]:
//!
//! ```no_run
//! let Some(worker) = teamhost_tests::polyglot::component(teamhost_tests::WORKER_PY) else {
//!     return; // TEAMHOST_NO_POLYGLOT=1: skipped, and said so on stderr
//! };
//! ```
//!
//! A missing component fails the test, naming what to run: `scripts/test`
//! (and so CI) installs the toolchains and builds the guests first, so there
//! a missing component is a bug, never a reason to skip. Only
//! `TEAMHOST_NO_POLYGLOT=1`, which a person sets on a machine without
//! Python or Node, skips these tests; `scripts/test` clears it.

/// The variable that skips the tests of Python and JavaScript guests.
pub const SKIP_VAR: &str = "TEAMHOST_NO_POLYGLOT";

/// Whether `TEAMHOST_NO_POLYGLOT=1` asks to skip the Python and JavaScript
/// guests' tests.
pub fn skipped() -> bool {
    std::env::var_os(SKIP_VAR).is_some_and(|v| v == "1")
}

/// `path` (one of the constants) when its component was built; `None` when
/// [`skipped`], after saying so on stderr. Panics when it is missing
/// otherwise, saying why and what to run.
pub fn component(path: &'static str) -> Option<&'static str> {
    if skipped() {
        eprintln!("skipped: {SKIP_VAR}=1 (the test needs {path})");
        return None;
    }
    if std::path::Path::new(path).is_file() {
        return Some(path);
    }
    let why = crate::POLYGLOT_MISSING
        .unwrap_or("the toolchain is installed, but the component is not there");
    panic!(
        "{path} is missing ({why}).\n\
         Build it with scripts/polyglot-toolchain && scripts/build-polyglot (cargo test \
         runs the second itself when guests/, wit/ or the toolchain change); or set \
         {SKIP_VAR}=1 to skip the Python and JavaScript guests' tests on a machine \
         without python3 and node."
    )
}
