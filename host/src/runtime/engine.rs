//! The wasmtime engine every teammate of a process shares, and its epoch
//! ticker.
//!
//! Epoch interruption bounds how long a guest runs without yielding: the
//! ticker advances the epoch every [`EPOCH_TICK`], and each teammate's store
//! yields to the async executor at every tick, so one busy guest never starves
//! the others (or the host) on a small machine.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use wasmtime::component::Linker;
use wasmtime::{Config, Engine};

use super::bindings::{self, TeammatePre};
use super::cache::ComponentCache;
use super::interfaces::{
    CoordinationData, LeadData, ModelData, ReadData, StateData, SubagentData, ToolData,
};
use super::state::TeammateState;
use super::wasi_http::WasiHttpGrant;

/// How often the epoch advances (and a running guest yields).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);

/// The engine, component cache and linker shared by all teammates of a process.
/// Cheap to clone.
#[derive(Clone)]
pub struct Runtime {
    inner: Arc<RuntimeInner>,
}

struct RuntimeInner {
    engine: Engine,
    linker: Linker<TeammateState>,
    /// `linker` with `wasi:http`: for a component that imports it, loaded
    /// for a teammate granted `allowed_outbound_hosts`.
    http_linker: Linker<TeammateState>,
    cache: ComponentCache,
    pres: Mutex<HashMap<String, TeammatePre<TeammateState>>>,
}

/// The host's environment variable that turns Cranelift's function cache
/// on (`1`): an edit of a Python or JS teammate then recompiles 35 to 45 %
/// faster, but a home's first compile of such a component takes about
/// twice as long (each function hashed, serialised and written), so it is
/// off by default. Read from the host process's environment only, which no
/// teammate can set.
pub const FUNCTION_CACHE_ENV: &str = "TEAMHOST_FUNCTION_CACHE";

fn function_cache_wanted() -> bool {
    std::env::var(FUNCTION_CACHE_ENV).is_ok_and(|v| v == "1")
}

impl Runtime {
    /// Builds the engine (component model, async, epoch interruption), the
    /// linker (WASI p2 + every teamhost interface; a second one with
    /// `wasi:http` too) and a component cache that
    /// stores precompiled artifacts in `cache_dir` (none when `None`), with
    /// Cranelift's function cache in `{cache_dir}/functions` when the host's
    /// environment asks for it ([`FUNCTION_CACHE_ENV`]).
    /// Starts the epoch ticker thread, which stops when the engine is dropped.
    pub fn new(cache_dir: Option<std::path::PathBuf>) -> anyhow::Result<Self> {
        let mut config = Config::new();
        config.wasm_component_model(true);
        config.epoch_interruption(true);
        // Fiber stacks whose pages go back to the kernel between turns.
        config.with_host_stack(Arc::new(super::stacks::TrimmingStacks));
        if let Some(dir) = cache_dir.as_ref().filter(|_| function_cache_wanted()) {
            // Functions compiled before are not compiled again.
            let functions = super::function_cache::FunctionCache::new(dir.join("functions"));
            config.enable_incremental_compilation(Arc::new(functions))?;
        }
        let engine = Engine::new(&config)?;
        let mut linker = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        // The guest's file writes, counted against its disk budget.
        super::wasi_writes::add_to_linker(&mut linker)?;
        // The guest's file opens, never waiting on a special file; the
        // files they create are counted as entries of the tree.
        super::open_guard::add_to_linker(&mut linker, super::wasi_writes::note_created)?;
        add_teamhost_interfaces(&mut linker)?;
        let mut http_linker = linker.clone();
        super::wasi_http::add_to_linker(&mut http_linker)?;
        let weak = engine.weak();
        std::thread::Builder::new()
            .name("teamhost-epoch".into())
            .spawn(move || loop {
                std::thread::sleep(EPOCH_TICK);
                match weak.upgrade() {
                    Some(engine) => engine.increment_epoch(),
                    None => return,
                }
            })?;
        let cache = ComponentCache::new(engine.clone(), cache_dir);
        Ok(Runtime {
            inner: Arc::new(RuntimeInner {
                engine,
                linker,
                http_linker,
                cache,
                pres: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The shared engine.
    pub fn engine(&self) -> &Engine {
        &self.inner.engine
    }

    /// The linker every teammate is instantiated with.
    pub fn linker(&self) -> &Linker<TeammateState> {
        &self.inner.linker
    }

    /// The component cache.
    pub fn cache(&self) -> &ComponentCache {
        &self.inner.cache
    }

    /// Loads (through the cache) and links the component at `path`, ready to
    /// instantiate; linked components are kept per content hash. A
    /// component that imports `wasi:http` is linked with it when `http`
    /// grants it, and refused otherwise, the error naming
    /// `[teammate.network] allowed_outbound_hosts` (checked before the
    /// kept ones are looked at, so a grant one teammate had never serves
    /// another). To compile ahead of a spawn, [`Runtime::compile`].
    pub fn prepare(
        &self,
        path: &std::path::Path,
        http: WasiHttpGrant,
    ) -> anyhow::Result<TeammatePre<TeammateState>> {
        self.prepare_hashed(path, http).map(|(_, pre)| pre)
    }

    /// [`Runtime::prepare`], with the content hash (hex SHA-256) of what
    /// was loaded: the hash a spawn record keeps for it.
    pub(crate) fn prepare_hashed(
        &self,
        path: &std::path::Path,
        http: WasiHttpGrant,
    ) -> anyhow::Result<(String, TeammatePre<TeammateState>)> {
        let (hash, component) = self.inner.cache.load(path)?;
        super::wasi_http::refuse_ungranted(&component, &self.inner.engine, http)
            .map_err(|e| anyhow::anyhow!("{} cannot be loaded: {e:#}", path.display()))?;
        if let Some(pre) = self.inner.pres.lock().expect("pre cache").get(&hash) {
            return Ok((hash, pre.clone()));
        }
        let linker = match super::wasi_http::imported(&component, &self.inner.engine) {
            Some(_) => &self.inner.http_linker,
            None => &self.inner.linker,
        };
        let instance_pre = linker.instantiate_pre(&component).map_err(|e| {
            anyhow::anyhow!(
                "{} does not fit the teamhost:agent/teammate world: {e:#}",
                path.display()
            )
        })?;
        let pre = TeammatePre::new(instance_pre).map_err(|e| {
            anyhow::anyhow!(
                "{} does not fit the teamhost:agent/teammate world (it must export teamhost:agent/handler@0.1.0): {e:#}",
                path.display()
            )
        })?;
        self.inner
            .pres
            .lock()
            .expect("pre cache")
            .insert(hash.clone(), pre.clone());
        Ok((hash, pre))
    }
}

impl Runtime {
    /// Compiles (or takes from the cache) and links the component at
    /// `path` ahead of its spawns (`Host::compile`, a standby's
    /// takeovers): linked as for a teammate granted `wasi:http`
    /// when it imports it, since each teammate's own grant is judged when
    /// it is spawned ([`Runtime::prepare`]).
    pub fn compile(&self, path: &std::path::Path) -> anyhow::Result<()> {
        self.prepare(path, WasiHttpGrant::Granted).map(|_| ())
    }
}

/// One line per teamhost interface, each on its narrowest view of
/// [`AgentCtx`](super::AgentCtx) (`interfaces/views.rs`), never on the whole
/// store data.
fn add_teamhost_interfaces(linker: &mut Linker<TeammateState>) -> anyhow::Result<()> {
    use bindings::{mailbox, messaging, model, protocol, tasks, team, toolbox, tools, types};
    types::add_to_linker::<_, ReadData>(linker, |s| s.agent.read_glue())?;
    protocol::add_to_linker::<_, ReadData>(linker, |s| s.agent.read_glue())?;
    team::add_to_linker::<_, ReadData>(linker, |s| s.agent.read_glue())?;
    mailbox::add_to_linker::<_, CoordinationData>(linker, |s| s.agent.coordination_glue())?;
    tasks::add_to_linker::<_, CoordinationData>(linker, |s| s.agent.coordination_glue())?;
    messaging::add_to_linker::<_, CoordinationData>(linker, |s| s.agent.coordination_glue())?;
    tools::add_to_linker::<_, ToolData>(linker, |s| s.agent.tool_glue())?;
    toolbox::add_to_linker::<_, ToolData>(linker, |s| s.agent.tool_glue())?;
    model::add_to_linker::<_, ModelData>(linker, |s| s.agent.model_glue())?;
    bindings::state::add_to_linker::<_, StateData>(linker, |s| s.agent.state_glue())?;
    bindings::subagents::add_to_linker::<_, SubagentData>(linker, |s| s.agent.subagent_glue())?;
    bindings::leading::add_to_linker::<_, LeadData>(linker, |s| s.agent.lead_glue())?;
    Ok(())
}
