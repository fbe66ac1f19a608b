//! Cranelift's incremental compilation cache on disk: compiled functions
//! kept by the hash of their body, so that a component whose functions are
//! mostly unchanged (a Python or JS teammate after an edit of its script:
//! the interpreter inside is the same) compiles only what changed. Given to
//! wasmtime with `Config::enable_incremental_compilation` when the runtime
//! has a cache directory and `TEAMHOST_FUNCTION_CACHE=1` is in the host's
//! environment (off by default: a home's first compile of a large component
//! takes about twice as long with it; see `engine.rs`); entries live in
//! `{cache}/functions/{xx}/{hash}`.
//!
//! An entry is compiled machine code, trusted like the precompiled
//! components beside it (see `cache.rs`): the home's cache lies in no
//! teammate's directory (the layout check). Each entry starts with the
//! SHA-256 of the rest, checked on every read, so a damaged or truncated
//! entry is a miss (compiled again), never used. A cache that cannot be
//! written only costs speed. Nothing is evicted: `rm -r` of the directory
//! is always safe.

use std::borrow::Cow;
use std::path::PathBuf;

use sha2::{Digest, Sha256};
use wasmtime::CacheStore;

/// The cache: one file per compiled function. See the module docs.
#[derive(Debug)]
pub struct FunctionCache {
    dir: PathBuf,
}

impl FunctionCache {
    /// A cache in `dir` (made when the first entry is written).
    pub fn new(dir: PathBuf) -> Self {
        FunctionCache { dir }
    }

    fn path(&self, key: &[u8]) -> PathBuf {
        let name = super::cache::hex(&Sha256::digest(key));
        self.dir.join(&name[..2]).join(&name[2..])
    }
}

impl CacheStore for FunctionCache {
    fn get(&self, key: &[u8]) -> Option<Cow<'_, [u8]>> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        let (digest, value) = bytes.split_at_checked(32)?;
        if digest != Sha256::digest(value).as_slice() {
            tracing::debug!("a damaged entry of the function cache: compiled again");
            return None;
        }
        Some(Cow::Owned(value.to_vec()))
    }

    fn insert(&self, key: &[u8], value: Vec<u8>) -> bool {
        let path = self.path(key);
        let mut bytes = Sha256::digest(&value).to_vec();
        bytes.extend_from_slice(&value);
        // A new file renamed into place, so a reader never sees half of
        // one; no fsync (thousands of entries per component: a lost entry
        // after a crash is only a miss, and a torn one fails its digest).
        let mut tmp = path.clone().into_os_string();
        tmp.push(format!(
            ".{}.{:x}.tmp",
            std::process::id(),
            fastrand::u64(..)
        ));
        let written = path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|()| std::fs::write(&tmp, &bytes))
            .and_then(|()| std::fs::rename(&tmp, &path));
        if written.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        written.is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_reads_back_and_a_damaged_one_is_a_miss() {
        let tmp = tempfile::tempdir().unwrap();
        let cache = FunctionCache::new(tmp.path().join("functions"));
        assert!(cache.get(b"key").is_none());
        assert!(cache.insert(b"key", b"compiled".to_vec()));
        assert_eq!(cache.get(b"key").as_deref(), Some(&b"compiled"[..]));
        let path = cache.path(b"key");
        let mut bytes = std::fs::read(&path).unwrap();
        *bytes.last_mut().unwrap() ^= 1;
        std::fs::write(&path, bytes).unwrap();
        assert!(cache.get(b"key").is_none(), "a damaged entry is never used");
    }

    /// Measures the compile of two Python components built with the same
    /// componentize-py (the same interpreter, other app.py): the second
    /// compiles with the first one's functions cached. Needs
    /// `scripts/build-polyglot`; prints the figures.
    #[test]
    #[ignore = "needs target/guests/polyglot (scripts/build-polyglot); a measurement, ~1 min"]
    fn a_python_edit_recompiles_only_what_changed() {
        assert_eq!(
            std::env::var(crate::runtime::FUNCTION_CACHE_ENV).as_deref(),
            Ok("1"),
            "run it with TEAMHOST_FUNCTION_CACHE=1 (the cache is off by default)"
        );
        let polyglot =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/guests/polyglot");
        let tmp = tempfile::tempdir().unwrap();
        let (first, second) = (
            polyglot.join("echo-py.wasm"),
            polyglot.join("agent-py.wasm"),
        );
        let time = |rt: &crate::runtime::Runtime, path: &std::path::Path| {
            let t = std::time::Instant::now();
            rt.cache().load(path).unwrap();
            t.elapsed()
        };
        // Without the function cache: no cache directory at all (so no
        // artifact written either: the figure flatters the old way).
        let cold = time(&crate::runtime::Runtime::new(None).unwrap(), &second);
        let rt = crate::runtime::Runtime::new(Some(tmp.path().join("cache"))).unwrap();
        let warm_up = time(&rt, &first);
        let rt = crate::runtime::Runtime::new(Some(tmp.path().join("cache"))).unwrap();
        let edited = time(&rt, &second);
        let entries = walkdir_count(&tmp.path().join("cache/functions"));
        eprintln!("agent-py without function cache: {cold:.1?}; echo-py filling it: {warm_up:.1?}; agent-py after: {edited:.1?}; {entries} entries");
        assert!(edited < cold, "the cached functions made no difference");
    }

    fn walkdir_count(dir: &std::path::Path) -> usize {
        std::fs::read_dir(dir)
            .map(|d| {
                d.flatten()
                    .map(|e| std::fs::read_dir(e.path()).map(|f| f.count()).unwrap_or(0))
                    .sum()
            })
            .unwrap_or(0)
    }
}
