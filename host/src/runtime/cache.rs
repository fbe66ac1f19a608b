//! Compile each component once per content hash and keep the result.
//!
//! In memory, a compiled component and its `InstancePre` are shared by every
//! teammate running the same bytes. On disk, the precompiled artifact is kept
//! under the cache directory as `{sha256}-{engine hash}.cwasm`, so the next
//! process loads it in well under a millisecond instead of compiling again.
//! An artifact that fails to load (other wasmtime version, damaged file) is
//! compiled again and replaced; a cache directory that cannot be written only
//! costs speed.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::Context;
use sha2::{Digest, Sha256};
use wasmtime::component::Component;
use wasmtime::Engine;

/// The cache. See the module docs.
pub struct ComponentCache {
    engine: Engine,
    dir: Option<PathBuf>,
    loaded: Mutex<HashMap<String, Component>>,
}

impl ComponentCache {
    /// A cache for `engine`, storing artifacts in `dir` when given.
    pub fn new(engine: Engine, dir: Option<PathBuf>) -> Self {
        ComponentCache {
            engine,
            dir,
            loaded: Mutex::new(HashMap::new()),
        }
    }

    /// Loads the component at `path`: from memory, else from a precompiled
    /// artifact, else by compiling it (and saving the artifact). Returns the
    /// content hash (hex SHA-256) with the component.
    pub fn load(&self, path: &Path) -> anyhow::Result<(String, Component)> {
        let bytes = std::fs::read(path)
            .with_context(|| format!("cannot read component {}", path.display()))?;
        self.load_bytes(&bytes)
            .with_context(|| format!("cannot load component {}", path.display()))
    }

    /// Like [`load`](Self::load) for bytes already in memory.
    pub fn load_bytes(&self, bytes: &[u8]) -> anyhow::Result<(String, Component)> {
        let hash = hex(&Sha256::digest(bytes));
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
        Ok(Component::new(&self.engine, bytes)?)
    }

    fn artifact_path(&self, hash: &str) -> Option<PathBuf> {
        let dir = self.dir.as_ref()?;
        let mut h = std::collections::hash_map::DefaultHasher::new();
        self.engine.precompile_compatibility_hash().hash(&mut h);
        Some(dir.join(format!("{hash}-{:016x}.cwasm", h.finish())))
    }

    fn load_artifact(&self, path: &Path) -> Option<Component> {
        if !path.is_file() {
            return None;
        }
        // SAFETY: the file was written by `save_artifact` of a compatible
        // engine (the engine hash is in its name) into teamhost's own cache
        // directory; wasmtime still checks its header and version.
        match unsafe { Component::deserialize_file(&self.engine, path) } {
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
            .and_then(|bytes| crate::store::atomic::write_atomic(path, &bytes).map_err(Into::into));
        if let Err(e) = result {
            tracing::warn!(artifact = %path.display(), error = %e, "could not cache compiled component");
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
