//! The spawn record: everything needed to spawn a teammate again as its
//! host spawned it, kept at `{home}/kept/{team}/{name}.spawn.json` (see
//! [`super::kept`] for the directory and what else is kept there).
//! Written by `Host::spawn`, read by `Host::resume`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::Digest;

use super::{Home, Kept};
use crate::durable::write_json;
use crate::error::{Error, Result};
use crate::teammate::{Isolation, SpawnRequest, TeammateSettings};

/// Everything needed to spawn a teammate again, as its host spawned it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpawnRecord {
    /// Member name.
    pub name: String,
    /// The component, absolute.
    pub component: PathBuf,
    /// SHA-256 of the component's bytes at spawn, hex.
    pub component_sha256: String,
    /// The directory it was given (for a worktree teammate, the repository).
    pub cwd: PathBuf,
    /// Whether it works in its own git worktree.
    pub worktree: bool,
    /// `in-process`, `process` or `tmux`.
    pub backend: String,
    /// How it runs, as spawned (grants and approved plans of its life are
    /// not carried over: a resumed teammate asks again).
    pub settings: TeammateSettings,
    /// The host process that spawned it.
    pub host_pid: u32,
    /// That process's start time (`/proc/{pid}/stat`), naming it for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_start_time: Option<u64>,
    /// Unix milliseconds.
    pub spawned_at: u64,
}

impl SpawnRecord {
    /// The record of `req`, spawned by this process in `backend`, whose
    /// component's bytes hash to `component_sha256` (hex; the component
    /// cache already knows it for a component it loaded).
    pub fn new(req: &SpawnRequest, backend: &str, component_sha256: String) -> Result<SpawnRecord> {
        let component = std::path::absolute(&req.component)
            .map_err(|e| Error::io("resolve", &req.component, e))?;
        Ok(SpawnRecord {
            name: req.name.clone(),
            component_sha256,
            component,
            cwd: std::path::absolute(&req.cwd).map_err(|e| Error::io("resolve", &req.cwd, e))?,
            worktree: req.isolation == Isolation::Worktree,
            backend: backend.to_string(),
            settings: req.settings.clone(),
            host_pid: std::process::id(),
            host_start_time: super::process::own_start_time(),
            spawned_at: crate::protocol::time::now_ms(),
        })
    }

    /// The request that spawns it again, once its component is checked to
    /// be the one it was spawned with. `prompt` is not delivered by a
    /// resume (the first one is in its history); it only fills the field.
    pub fn request(&self) -> Result<SpawnRequest> {
        let now = sha256_of(&self.component)?;
        if now != self.component_sha256 {
            return Err(Error::Spawn(format!(
                "{}'s component {} changed since it was spawned (SHA-256 {} then, {} now); teamhost runs only the component a teammate was spawned with: spawn it afresh to run the new one",
                self.name,
                self.component.display(),
                short(&self.component_sha256),
                short(&now)
            )));
        }
        let mut req = SpawnRequest::new(&self.name, &self.component, "", &self.cwd);
        req.isolation = if self.worktree {
            Isolation::Worktree
        } else {
            Isolation::None
        };
        req.settings = self.settings.clone();
        Ok(req)
    }

    /// Whether the host that spawned it still runs, and is not this process.
    pub fn host_alive_elsewhere(&self) -> bool {
        super::process::runs_elsewhere(self.host_pid, self.host_start_time)
    }
}

/// The first 12 hex digits of a digest, as messages show it.
pub(crate) fn short(hex: &str) -> &str {
    &hex[..hex.len().min(12)]
}

/// SHA-256 of the file at `path`, hex.
pub(crate) fn sha256_of(path: &Path) -> Result<String> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read", path, e))?;
    let digest = sha2::Sha256::digest(&bytes);
    Ok(digest.iter().map(|b| format!("{b:02x}")).collect())
}

/// Writes (or replaces) `rec`.
pub fn record(home: &Home, team: &str, rec: &SpawnRecord) -> Result<()> {
    write_json(&home.kept(team, &rec.name, Kept::Spawn)?, rec)
}

/// Removes `name`'s record, if there is one (a spawn that failed after
/// its record was written).
pub fn remove(home: &Home, team: &str, name: &str) -> Result<()> {
    let path = home.kept(team, name, Kept::Spawn)?;
    match std::fs::remove_file(&path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(Error::io("remove", path, e)),
        _ => Ok(()),
    }
}

/// Every spawn record of `team`. A record that cannot be read is skipped
/// with a warning naming it (resume then reports that teammate as not
/// teamhost's).
pub fn list(home: &Home, team: &str) -> Result<Vec<SpawnRecord>> {
    let dir = home.kept_dir(team);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io("read", dir, e)),
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(|e| e.ok()) {
        let path = entry.path();
        if !path.to_string_lossy().ends_with(".spawn.json") {
            continue;
        }
        match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice::<SpawnRecord>(&b).map_err(|e| e.to_string()))
        {
            Ok(r) => out.push(r),
            Err(e) => {
                tracing::warn!(path = %path.display(), error = %e, "unreadable spawn record skipped")
            }
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spawn_record_round_trips_and_a_changed_component_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let home = Home::new(tmp.path().join("home"));
        let comp = tmp.path().join("w.wasm");
        std::fs::write(&comp, b"component v1").unwrap();
        let mut req = SpawnRequest::new("alice", &comp, "go", tmp.path());
        req.settings.mode = Some(crate::sandbox::PermissionMode::AcceptEdits);
        req.settings.limits.max_pending_requests = 3;
        let rec = SpawnRecord::new(&req, "in-process", sha256_of(&comp).unwrap()).unwrap();
        record(&home, "t", &rec).unwrap();
        let back = list(&home, "t").unwrap();
        assert_eq!(back, vec![rec.clone()]);
        let again = back[0].request().unwrap();
        assert_eq!(again.settings, req.settings);
        assert!(
            !back[0].host_alive_elsewhere(),
            "this process is not elsewhere"
        );

        std::fs::write(&comp, b"component v2, swapped in").unwrap();
        let e = back[0].request().unwrap_err().to_string();
        assert!(e.contains("changed since it was spawned"), "{e}");
    }
}
