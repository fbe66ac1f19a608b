//! One teammate's live instance: its `Store` (WASI context with one preopened
//! directory, limits, [`AgentCtx`]) and the instantiated component, kept alive
//! across turns so a guest can remember things between them.

use std::path::PathBuf;

use anyhow::Context;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, StoreLimitsBuilder};
use wasmtime_wasi::cli::OutputFile;
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::handler::{Turn, TurnOutcome};
use super::bindings::{Teammate, TeammatePre};
use super::engine::Runtime;
use super::state::{AgentCtx, TeammateState};

/// Default cap on a teammate's linear memory: 64 MiB.
pub const DEFAULT_MEMORY_LIMIT: usize = 64 << 20;

/// How to build a teammate's sandbox.
#[derive(Debug, Clone)]
pub struct InstanceConfig {
    /// The one directory the guest can see, preopened as `.`.
    pub dir: PathBuf,
    /// Preopen it read-only (plan mode).
    pub read_only: bool,
    /// Linear memory cap in bytes ([`DEFAULT_MEMORY_LIMIT`]).
    pub memory_limit: usize,
    /// File receiving the guest's stdout and stderr (appended); discarded when
    /// `None`.
    pub log: Option<PathBuf>,
}

/// A running teammate instance.
pub struct Instance {
    store: Store<TeammateState>,
    bindings: Teammate,
}

impl Instance {
    /// Instantiates `pre` in a fresh store for `agent`. The guest gets the
    /// directory of `config` and nothing else: no environment, no arguments,
    /// no network, stdin empty.
    pub async fn new(
        runtime: &Runtime,
        pre: &TeammatePre<TeammateState>,
        agent: AgentCtx,
        config: &InstanceConfig,
    ) -> anyhow::Result<Self> {
        let mut wasi = WasiCtxBuilder::new();
        let perms = if config.read_only {
            FsPerms::ReadOnly
        } else {
            FsPerms::ReadWrite
        };
        wasi.preopened_dir(&config.dir, ".", perms)
            .map_err(anyhow::Error::from)
            .with_context(|| format!("cannot open {} for the guest", config.dir.display()))?;
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false);
        if let Some(log) = &config.log {
            if let Some(parent) = log.parent() {
                std::fs::create_dir_all(parent)?;
            }
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(log)
                .with_context(|| format!("cannot open log {}", log.display()))?;
            wasi.stdout(OutputFile::new(file.try_clone()?));
            wasi.stderr(OutputFile::new(file));
        }
        let state = TeammateState {
            wasi: wasi.build(),
            table: ResourceTable::new(),
            limits: StoreLimitsBuilder::new()
                .memory_size(config.memory_limit)
                .trap_on_grow_failure(true)
                .build(),
            agent,
        };
        let mut store = Store::new(runtime.engine(), state);
        store.limiter(|s| &mut s.limits);
        store.epoch_deadline_async_yield_and_update(1);
        let bindings = pre.instantiate_async(&mut store).await?;
        Ok(Instance { store, bindings })
    }

    /// Calls the guest's turn handler. `Err` is a trap (the teammate is
    /// broken); `Ok(Err(reason))` is a turn the guest itself reports as failed.
    pub async fn handle_turn(
        &mut self,
        turn: &Turn,
    ) -> anyhow::Result<Result<TurnOutcome, String>> {
        self.bindings
            .teamhost_agent_handler()
            .call_handle_turn(&mut self.store, turn)
            .await
            .map_err(anyhow::Error::from)
    }

    /// The interface state (identity, turn record, pending requests).
    pub fn agent(&mut self) -> &mut AgentCtx {
        &mut self.store.data_mut().agent
    }
}
