//! Compile each component once per content hash and keep the result.
//!
//! In memory, a compiled component and its `InstancePre` are shared by every
//! teammate running the same bytes. On disk, the precompiled artifact is kept
//! under the cache directory as `{sha256}-{engine hash}.cwasm`, so the next
//! process loads it in well under a millisecond instead of compiling again.
//! An artifact that fails to load (other wasmtime version, damaged file) is
//! compiled again and replaced; a cache directory that cannot be written only
//! costs speed.
//!
//! # Artifacts are native code
//!
//! A `.cwasm` is machine code that wasmtime maps and runs without checking it
//! (`Component::deserialize` is `unsafe`): whoever can write the cache can run
//! code as the host. The guard is that nothing a teammate can write holds the
//! cache: the home, and so `cache/`, may not lie inside any teammate's
//! directory (the layout check at spawn). On top of that, each artifact is
//! saved with the SHA-256 of its own bytes beside it (`{name}.cwasm.sha256`),
//! and loading reads the file once, hashes those bytes and deserialises the
//! very bytes it checked (no second read a writer could race). A mismatch, a
//! missing digest or a damaged file is a cache miss: the component is compiled
//! again and both files are replaced, with a log line. The digest catches
//! damage and a swapped artifact whose writer did not also rewrite the digest;
//! it is not a signature, since the digest sits in the same directory.
//!
//! # A spawn does not read the component again
//!
//! A component file's content hash is remembered with the file's identity
//! (device, inode, size, modification and change times): a spawn of a file
//! seen before costs a `stat`, not a read and a SHA-256 of every byte (18 MB
//! for a Python component). A file modified within 100 ms of being hashed is
//! not remembered, since a second write in the same clock tick could keep its
//! identity. And two spawns of one component that is not compiled yet share
//! one compilation: the second waits for the first instead of compiling it
//! again. Compilations of different components take turns in a queue sized
//! to the cores (`compile_queue.rs`); a cached component never waits there.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

/// The cache. See the module docs.
pub struct ComponentCache {
    engine: Engine,
    dir: Option<PathBuf>,
    loaded: Mutex<HashMap<String, Component>>,
    /// Content hash of each file seen, with the identity it had.
    hashed: Mutex<HashMap<PathBuf, (FileId, String)>>,
    /// One lock per content hash being compiled or loaded from disk.
    loading: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    /// Where compilations wait for a slot.
    queue: super::compile_queue::CompileQueue,
}

/// A component file's identity, for the hash memo.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

impl FileId {
    fn of(meta: &std::fs::Metadata) -> FileId {
        FileId {
            dev: meta.dev(),
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
        }
    }
}

/// A file modified this recently when hashed is hashed again next time.
const RACY: Duration = Duration::from_millis(100);

impl ComponentCache {
    /// A cache for `engine`, storing artifacts in `dir` when given.
    pub fn new(engine: Engine, dir: Option<PathBuf>) -> Self {
        ComponentCache {
            engine,
            dir,
            loaded: Mutex::new(HashMap::new()),
            hashed: Mutex::new(HashMap::new()),
            loading: Mutex::new(HashMap::new()),
            queue: super::compile_queue::CompileQueue::for_this_machine(),
        }
    }

    /// Loads the component at `path`: from memory, else from a precompiled
    /// artifact, else by compiling it (and saving the artifact). Returns the
    /// content hash (hex SHA-256) with the component.
    pub fn load(&self, path: &Path) -> anyhow::Result<(String, Component)> {
        let meta = std::fs::metadata(path)
            .with_context(|| format!("cannot read component {}", path.display()))?;
        let id = FileId::of(&meta);
        let known = self.hashed.lock().expect("cache lock").get(path).cloned();
        if let Some((_, hash)) = known.filter(|(seen, _)| *seen == id) {
            if let Some(c) = self.loaded.lock().expect("cache lock").get(&hash) {
                return Ok((hash, c.clone()));
            }
        }
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read component {}", path.display()))?;
        let loaded = self
            .load_bytes(&bytes)
            .with_context(|| format!("cannot load component {}", path.display()))?;
        let racy = meta
            .modified()
            .ok()
            .and_then(|m| SystemTime::now().duration_since(m).ok())
            .is_none_or(|age| age < RACY);
        if !racy && bytes.len() as u64 == id.size {
            self.hashed
                .lock()
                .expect("cache lock")
                .insert(path.to_path_buf(), (id, loaded.0.clone()));
        }
        Ok(loaded)
    }

    /// Like [`load`](Self::load) for bytes already in memory.
    pub fn load_bytes(&self, bytes: &[u8]) -> anyhow::Result<(String, Component)> {
        let hash = hex(&Sha256::digest(bytes));
        if let Some(c) = self.loaded.lock().expect("cache lock").get(&hash) {
            return Ok((hash, c.clone()));
        }
        // One compilation per content hash: a second caller waits for it.
        let gate = self
            .loading
            .lock()
            .expect("cache lock")
            .entry(hash.clone())
            .or_default()
            .clone();
        let _turn = gate.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = self.loaded.lock().expect("cache lock").get(&hash) {
            return Ok((hash, c.clone()));
        }
        let component = match self.artifact_path(&hash) {
            Some(artifact) => match self.load_artifact(&artifact) {
                Some(c) => c,
                None => {
                    let c = self.compile(bytes)?;
                    self.save_artifact(&c, &artifact);
                    c
                }
            },
            None => self.compile(bytes)?,
        };
        self.loaded
            .lock()
            .expect("cache lock")
            .insert(hash.clone(), component.clone());
        self.loading.lock().expect("cache lock").remove(&hash);
        Ok((hash, component))
    }

    fn compile(&self, bytes: &[u8]) -> anyhow::Result<Component> {
        if !bytes.starts_with(b"\0asm") {
            anyhow::bail!(
                "not a WebAssembly file (no \\0asm header); expected a component built for wasm32-wasip2"
            );
        }
        if bytes.get(4..8) != Some(&[0x0d, 0x00, 0x01, 0x00]) {
            anyhow::bail!(
                "a core WebAssembly module, not a component: build the guest for wasm32-wasip2 (or wrap it with `wasm-tools component new`)"
            );
        }
        let _slot = self.queue.wait();
        Ok(Component::new(&self.engine, bytes)?)
    }

    fn artifact_path(&self, hash: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        Some(dir.join(format!("{hash}-{:016x}.cwasm", h.finish())))
    }

    fn load_artifact(&self, path: &Path) -> Option<Component> {
        let bytes = std::fs::read(path).ok()?;
        let digest = std::fs::read_to_string(digest_path(path)).unwrap_or_default();
        if digest.trim() != hex(&Sha256::digest(&bytes)) {
            tracing::warn!(
                artifact = %path.display(),
                "recompiling: the cached artifact does not match its recorded SHA-256"
            );
            return None;
        }
        // SAFETY: these exact bytes were written by `save_artifact` (their
        // digest matches the one it recorded) into the home's cache, which no
        // teammate can write (the layout check); wasmtime still checks the
        // header, version and engine compatibility.
        match unsafe { Component::deserialize(&self.engine, &bytes) } {
            Ok(c) => Some(c),
            Err(e) => {
                tracing::warn!(artifact = %path.display(), error = %e, "recompiling: cached artifact did not load");
                None
            }
        }
    }

    fn save_artifact(&self, component: &Component, path: &Path) {
        let result = component
            .serialize()
            .map_err(|e| anyhow::anyhow!(e))
            .and_then(|bytes| {
                // The digest first: an artifact never stands without its own.
                let digest = hex(&Sha256::digest(&bytes));
                crate::durable::write_atomic(&digest_path(path), digest.as_bytes())?;
                crate::durable::write_atomic(path, &bytes)?;
                Ok(())
            });
        if let Err(e) = result {
            tracing::warn!(artifact = %path.display(), error = %e, "could not cache compiled component");
        }
    }
}

/// Where the SHA-256 of the artifact at `path` is kept.
fn digest_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_os_string();
    name.push(".sha256");
    PathBuf::from(name)
}

pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    fn age(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(5);
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_times(std::fs::FileTimes::new().set_modified(old))
            .unwrap();
    }

    #[test]
    fn a_component_file_rebuilt_between_loads_is_read_again() {
        let tmp = tempfile::tempdir().unwrap();
        let rt = crate::runtime::Runtime::new(Some(tmp.path().join("cache"))).unwrap();
        let file = tmp.path().join("teammate.wasm");
        std::fs::copy(teamhost_tests::ECHO, &file).unwrap();
        age(&file);
        let (first, _) = rt.cache().load(&file).unwrap();
        // Remembered: the same answer without reading the file.
        assert_eq!(rt.cache().load(&file).unwrap().0, first);
        // Rebuilt in place (same path, other bytes).
        std::fs::write(&file, std::fs::read(teamhost_tests::PROBE).unwrap()).unwrap();
        age(&file);
        let (second, _) = rt.cache().load(&file).unwrap();
        assert_ne!(first, second, "the new bytes were hashed");
        let (probe, _) = rt.cache().load(Path::new(teamhost_tests::PROBE)).unwrap();
        assert_eq!(second, probe);
    }
}
