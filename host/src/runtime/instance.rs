//! One teammate's live instance: its `Store` (WASI context with one preopened
//! directory, limits, [`AgentCtx`]) and the instantiated component, kept alive
//! across turns so a guest can remember things between them.

use std::path::PathBuf;

use anyhow::Context;
use wasmtime::component::ResourceTable;
use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder};

use super::bindings::handler::{Turn, TurnOutcome};
use super::bindings::{Teammate, TeammatePre};
use super::engine::{Runtime, EPOCH_TICK};
use super::limiter::TreeLimiter;
use super::state::{AgentCtx, TeammateState};
use crate::sandbox::{DirAccess, Limits};
use capped_log::CappedLog;
use last_words::{crash_reason, Stderr, StderrTail};

mod capped_log;
pub mod last_words;
mod random;

/// How to build a teammate's sandbox.
#[derive(Debug, Clone)]
pub struct InstanceConfig {
    /// The one directory the guest can see, preopened as `.`.
    pub dir: PathBuf,
    /// What the guest's own file system calls may do there.
    pub access: DirAccess,
    /// Memory, CPU and wall-time limits.
    pub limits: Limits,
    /// File receiving the guest's stdout and stderr (appended); discarded when
    /// `None`.
    pub log: Option<PathBuf>,
}

/// A running teammate instance.
pub struct Instance {
    store: Store<TeammateState>,
    bindings: Teammate,
    wall: std::time::Duration,
    /// Time the turn waited on the model, left out of `wall`.
    model_clock: std::sync::Arc<crate::model::ModelClock>,
    memory: usize,
    /// Where the store's fiber stack is: trimmed after every call.
    stack: std::sync::Arc<super::stacks::StackSlot>,
    /// The last lines the guest wrote to stderr: its last words in a crash.
    stderr_tail: StderrTail,
    /// Its log file, named in a crash (`None`: output discarded).
    log: Option<PathBuf>,
    /// The same log as the guest writes it: its descriptor is closed
    /// whenever the stack is parked.
    capped: Option<CappedLog>,
}

impl Instance {
    /// Instantiates `pre` in a fresh store for `agent`. The guest gets the
    /// directory of `config` and nothing else: no environment, no arguments,
    /// no sockets, stdin empty; `wasi:http` through its proxy when its
    /// network grants `allowed_outbound_hosts` (`wasi_http/`).
    pub async fn new(
        runtime: &Runtime,
        pre: &TeammatePre<TeammateState>,
        agent: AgentCtx,
        config: &InstanceConfig,
    ) -> anyhow::Result<Self> {
        let mut wasi = WasiCtxBuilder::new();
        let perms = match config.access {
            DirAccess::None => None,
            DirAccess::ReadOnly => Some(FsPerms::ReadOnly),
            DirAccess::ReadWrite => Some(FsPerms::ReadWrite),
        };
        if let Some(perms) = perms {
            wasi.preopened_dir(&config.dir, ".", perms)
                .map_err(anyhow::Error::from)
                .with_context(|| format!("cannot open {} for the guest", config.dir.display()))?;
        }
        wasi.allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            // The thread's generator for `wasi:random` (`random.rs`), not a
            // ChaCha state of the context's own: 320 bytes less a teammate.
            .secure_random(random::ThreadRandom)
            // One call's bytes are built by the host, outside the memory
            // limit and the CPU count (`MAX_RANDOM_BYTES`).
            .max_random_size(crate::sandbox::MAX_RANDOM_BYTES);
        let stderr_tail = StderrTail::default();
        let log = match &config.log {
            Some(log) => Some(CappedLog::open(log, config.limits.max_log_bytes)?),
            None => None,
        };
        if let Some(log) = &log {
            wasi.stdout(log.clone());
        }
        let capped = log.clone();
        // Kept even without a log: a crash still says what the guest said.
        wasi.stderr(Stderr {
            log,
            tail: stderr_tail.clone(),
        });
        let mut table = ResourceTable::new();
        table.set_max_capacity(config.limits.max_open_resources);
        let model_clock = agent.model.clock.clone();
        let limiter = TreeLimiter::new(agent.fixed.budget.clone(), config.limits.memory_bytes);
        let http = super::wasi_http::HttpSeat::new(agent.tools.network.clone());
        let state = TeammateState {
            wasi: wasi.build(),
            http,
            table,
            limiter,
            cpu_ticks: 0,
            cpu_budget: (config.limits.cpu_per_turn.as_millis() / EPOCH_TICK.as_millis()).max(1)
                as u64,
            agent,
        };
        let mut store = Store::new(runtime.engine(), state);
        store.limiter(|s| &mut s.limiter);
        // Every tick the running guest yields to the executor (so a busy guest
        // never starves the others) and is charged one tick of CPU.
        store.set_epoch_deadline(1);
        store.epoch_deadline_callback(|mut ctx| {
            let state = ctx.data_mut();
            state.cpu_ticks += 1;
            if state.cpu_ticks > state.cpu_budget {
                return Err(wasmtime::Error::msg(format!(
                    "CPU limit: the turn ran for more than {} ms of CPU ([teammate.limits] cpu_per_turn_secs)",
                    state.cpu_budget * EPOCH_TICK.as_millis() as u64
                )));
            }
            Ok(UpdateDeadline::Yield(1))
        });
        let wall = config.limits.wall_per_turn;
        let memory = config.limits.memory_bytes;
        let stack = std::sync::Arc::new(super::stacks::StackSlot::default());
        let bindings = match stack.scope(pre.instantiate_async(&mut store)).await {
            Ok(b) => b,
            Err(e) => {
                // A guest drawing too much at once while it starts (a
                // module's import).
                if let Some(reason) = random_limit(&e) {
                    anyhow::bail!("{reason}");
                }
                // A sub-agent whose memory does not fit in its tree's pool.
                let text = format!("{e:?}");
                if let Some(at) = text.find("memory limit: ") {
                    let line = text[at..].lines().next().unwrap_or_default();
                    anyhow::bail!("{line}");
                }
                if is_trap(&e) {
                    // The guest crashed while it started (a Python or JS
                    // module that raises at import).
                    anyhow::bail!(
                        "{}",
                        crash_reason(&e, &stderr_tail.text(), config.log.as_deref())
                    );
                }
                return Err(anyhow::Error::from(e));
            }
        };
        // Not parked here: a teammate's first turn follows its spawn at
        // once (its prompt is in), and parking now would only give pages
        // back that the turn faults in again, at the price of a remap and a
        // TLB shootdown each way. [`Instance::rest`] parks it when no turn
        // comes; every turn parks it at its end.
        Ok(Instance {
            store,
            bindings,
            wall,
            model_clock,
            memory,
            stack,
            stderr_tail,
            log: config.log.clone(),
            capped,
        })
    }

    /// Gives the stack's pages back and closes the log's descriptor while
    /// the instance waits (a no-op when both are already). A new instance
    /// keeps both until its first turn ends or this is called; every turn
    /// gives them back at its end. Call it before an instance waits for
    /// long without a turn.
    pub fn rest(&self) {
        self.stack.park();
        if let Some(log) = &self.capped {
            log.release();
        }
    }

    /// Calls the guest's turn handler. `Err` is a trap (the teammate is
    /// broken); `Ok(Err(reason))` is a turn the guest itself reports as failed.
    ///
    /// Limits are enforced here: CPU (the epoch callback), memory (the store
    /// limiter and the tree's pool), wall time (a timeout around the call),
    /// WASI resources (the resource table's cap: one more traps) and the
    /// disk budget (counted as the guest writes, `wasi_writes.rs`, and the
    /// tree's directories measured again after every turn that ends
    /// normally). A breach is an `Err` whose message names the limit.
    pub async fn handle_turn(
        &mut self,
        turn: &Turn,
    ) -> anyhow::Result<Result<TurnOutcome, String>> {
        self.store.data_mut().cpu_ticks = 0;
        self.store
            .data()
            .agent
            .state
            .saves_turn
            .store(0, std::sync::atomic::Ordering::SeqCst);
        self.store.data().agent.model.client.start_turn();
        self.model_clock.reset();
        let (wall, clock) = (self.wall, self.model_clock.clone());
        let stack = self.stack.clone();
        stack.unpark().map_err(|e| {
            anyhow::anyhow!(
                "cannot map the teammate's stack for its turn ({e}); the process may have \
                 reached vm.max_map_count: raise it (sysctl vm.max_map_count) or run fewer \
                 teammates per process"
            )
        })?;
        // From here to the turn's end (`rest`), the log stays open.
        if let Some(log) = &self.capped {
            log.hold();
        }
        let call = self
            .bindings
            .teamhost_agent_handler()
            .call_handle_turn(&mut self.store, turn);
        let ended = within_wall(wall, &clock, stack.scope(call)).await;
        // No frame is live on the stack now: its pages go back (stacks.rs),
        // and the log's descriptor is closed.
        self.rest();
        match ended {
            Err(_) => anyhow::bail!(
                "wall-time limit: the turn took longer than {:?} ([teammate.limits] wall_per_turn_secs), not counting {:?} waiting on the model",
                wall,
                clock.waited()
            ),
            Ok(Ok(outcome)) => {
                self.check_disk_and_keep_life().await?;
                // Idle from here: no descriptor held for it meanwhile.
                self.store.data().agent.tools.tools.release_dir();
                Ok(outcome)
            }
            Ok(Err(trap)) => {
                if let Some(reason) = random_limit(&trap) {
                    anyhow::bail!("{reason}");
                }
                let text = format!("{trap:?}");
                for limit in ["disk limit: ", "memory limit: "] {
                    if let Some(line) = text.lines().find(|l| l.contains(limit)) {
                        let at = line.find(limit).unwrap_or(0);
                        anyhow::bail!("{}", &line[at..]);
                    }
                }
                if text.contains("resource table has no free keys") {
                    anyhow::bail!(
                        "descriptor limit: the guest held more than {} WASI resources (open \
                         files, streams, pollables) at once (max_open_resources, a fixed limit)",
                        self.store.data().table.max_capacity()
                    );
                }
                if text.contains("growing memory") || text.contains("memory.grow") {
                    anyhow::bail!(
                        "memory limit: the guest tried to grow its memory past {} MiB ([teammate.limits] memory_mb)",
                        self.memory >> 20
                    );
                }
                if is_trap(&trap) {
                    anyhow::bail!(
                        "{}",
                        crash_reason(&trap, &self.stderr_tail.text(), self.log.as_deref())
                    );
                }
                Err(anyhow::Error::from(trap))
            }
        }
    }

    /// After a turn: measures the tree's directories when the count
    /// during the turn cannot vouch for them (files made by other means,
    /// entries that may pass `disk_walk_entries`:
    /// [`DiskMeter::needs_measure`]), and keeps what the tree spent over
    /// its life for a resume ([`super::TreeBudget::save_life`]), both on
    /// one blocking thread, and no hand-off at all when neither is needed.
    /// A breach is an `Err` naming the limit ("disk limit"); the spending
    /// is kept either way. A failed write of it is logged: the teammate
    /// goes on, and a resume would count from the last record.
    ///
    /// [`DiskMeter::needs_measure`]: super::disk_meter::DiskMeter::needs_measure
    async fn check_disk_and_keep_life(&mut self) -> anyhow::Result<()> {
        let budget = self.store.data().agent.fixed.budget.clone();
        let meter = budget.disk().clone();
        let keeping = budget.clone();
        let keep = move || keeping.save_life();
        let (usage, saved) = if meter.needs_measure() {
            let (usage, saved) = meter.measure_then(keep).await;
            let saved = saved.unwrap_or_else(|| {
                Err(crate::Error::HostTask(
                    "keeping the life's spending panicked".into(),
                ))
            });
            (Some(usage), saved)
        } else if budget.life_unsaved() {
            let saved = crate::blocking::try_run("keeping the life's spending", keep).await;
            (None, saved)
        } else {
            (None, Ok(()))
        };
        if let Err(e) = saved {
            tracing::warn!(error = %e, "the teammate's life-long spending was not kept");
        }
        match usage.and_then(|usage| meter.budget().breach(&usage)) {
            Some(breach) => anyhow::bail!("{breach}"),
            None => Ok(()),
        }
    }

    /// What the teammate was given at spawn (its identity, team, lead,
    /// seats), read only.
    pub fn ctx(&self) -> &AgentCtx {
        &self.store.data().agent
    }

    /// The interface state (identity, turn record, pending requests).
    pub fn agent(&mut self) -> &mut AgentCtx {
        &mut self.store.data_mut().agent
    }
}

/// Whether `e` is the guest's crash (a trap, with or without the wasm
/// backtrace wasmtime attaches), not a host error that stopped it.
fn is_trap(e: &wasmtime::Error) -> bool {
    e.downcast_ref::<wasmtime::Trap>().is_some()
        || e.downcast_ref::<wasmtime::WasmBacktrace>().is_some()
}

/// Runs `call` until it ends or `wall` has passed, not counting the time
/// `clock` says the turn waited on the model (the deadline moves out by that
/// much, and never passes while a model call is in flight). `Err(())` when
/// the limit was reached.
async fn within_wall<F: std::future::Future>(
    wall: std::time::Duration,
    clock: &crate::model::ModelClock,
    call: F,
) -> Result<F::Output, ()> {
    let start = tokio::time::Instant::now();
    tokio::pin!(call);
    loop {
        let mut deadline = start + wall + clock.waited();
        if clock.waiting() {
            // The deadline moves with the call; look again now and then.
            deadline =
                deadline.max(tokio::time::Instant::now() + std::time::Duration::from_millis(250));
        }
        tokio::select! {
            out = &mut call => return Ok(out),
            () = tokio::time::sleep_until(deadline) => {
                if !clock.waiting() && start + wall + clock.waited() <= tokio::time::Instant::now() {
                    return Err(());
                }
            }
        }
    }
}

/// The failure's reason when `error` is wasmtime-wasi's refusal of a
/// `wasi:random` call past [`crate::sandbox::MAX_RANDOM_BYTES`]: the host
/// call's own error, exactly "requested len N exceeds limit M" with M the
/// bound (not the trap's whole text, which names the guest's functions).
fn random_limit(error: &wasmtime::Error) -> Option<String> {
    let root = error.root_cause().to_string();
    let (asked, limit) = root
        .strip_prefix("requested len ")?
        .split_once(" exceeds limit ")?;
    let asked: u64 = asked.parse().ok()?;
    (limit.parse::<u64>().ok()? == crate::sandbox::MAX_RANDOM_BYTES).then(|| {
        format!(
            "random limit: the guest asked wasi:random for {asked} bytes in one call; the most \
             is {} (MAX_RANDOM_BYTES, a fixed limit)",
            crate::sandbox::MAX_RANDOM_BYTES
        )
    })
}
