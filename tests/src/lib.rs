//! Artifacts for teamhost's end-to-end tests: the example teammate components
//! of `guests/`, compiled for `wasm32-wasip2` by this crate's build script.
//!
//! Each guest has a constant holding the absolute path of its component,
//! named after its crate in upper case:
//!
//! | constant   | crate              | behaviour                                        |
//! |------------|--------------------|--------------------------------------------------|
//! | [`ECHO`]     | `guests/echo`     | answers every plain message, to its sender       |
//! | [`WORKER`]   | `guests/worker`   | claims tasks, counts words in the files they name, writes `reports/task-N.md`, completes the task, tells the lead |
//! | [`REVIEWER`] | `guests/reviewer` | asks a peer by direct message, relays the answer in a later turn |
//! | [`PROBE`]    | `guests/probe`    | test teammate: logs every turn to `turns.log`; spawn-prompt directives make it reject shutdown, trap, spin, DM a peer or answer `reply` with `ack` |
//! | [`HOSTILE`]  | `guests/hostile`  | test teammate: attacks its sandbox (paths out, symlinks, Bash escapes, CPU and memory, huge messages, forged approvals) as its prompt or a message says; reports each result to the lead as `STEP\tOK\|ERR\tDETAIL` |
//! | [`AGENT`]    | `guests/agent`    | the LLM teammate: an agent loop over the host's `model` and `toolbox` |
//! | [`MODELBENCH`] | `guests/modelbench` | benchmark teammate: N model calls per message, then `done N` |
//! | [`FETCHER`]  | `guests/fetcher`  | test teammate importing `wasi:http`: answers `get URL` with `status N BODY` or `error TEXT` |
//! | [`LEADSCRIPT`] | `guests/leadscript` | test lead (the `lead` world): runs the script in its goal through `leading`, printing each result as `CMD\tOK\|ERR\tDETAIL` |
//!
//! [`ALL`] lists them all. A new crate in `guests/` gets its constant
//! automatically.
//!
//! The Python and JavaScript guests of `guests/python` and `guests/js` have
//! constants too, one per guest and engine: `{GUEST}_PY` (componentize-py),
//! `{GUEST}_JS` (componentize-js, StarlingMonkey) and `{GUEST}_QJS` (jco's
//! QuickJS backend), such as [`WORKER_PY`], [`WORKER_JS`] and [`WORKER_QJS`];
//! [`POLYGLOT`] lists them. They are built when `scripts/polyglot-toolchain`
//! has installed their tools; tests get them through [`polyglot::component`],
//! which fails a test whose component is missing (unless
//! `TEAMHOST_NO_POLYGLOT=1`).
//!
//! [`fixture`] is the one fixture the integration tests of both crates build
//! on: a team in a temporary home, alone or run by a host, probe requests and
//! event-driven waits.
//!
//! [`nats_server::NatsServer`] and [`nats_cluster::NatsCluster`] start a real
//! `nats-server` (one, or a JetStream cluster of several) for a test;
//! [`nats_relay::NatsRelay`] sits between a client and one of them and
//! loses or ages the server's answers on purpose (fault injection).
//!
//! [`model_server`] is a fake model provider on loopback for the model tests
//! and benchmark.
//!
//! ```no_run
//! let component = std::fs::read(teamhost_tests::ECHO).unwrap();
//! assert_eq!(&component[..8], b"\0asm\x0d\0\x01\0"); // a component, not a core module
//! ```
//!
//! Building this crate needs the `wasm32-wasip2` Rust target
//! (`rustup target add wasm32-wasip2`); the build script says so when it is
//! missing. The integration tests themselves live in `tests/`.

pub mod fixture;
pub mod lead_model;
pub mod measure;
pub mod model_server;
pub mod nats_cluster;
pub mod nats_relay;
pub mod nats_secure;
pub mod nats_server;
pub mod polyglot;
pub mod prompt_cache;

include!(concat!(env!("OUT_DIR"), "/guests.rs"));
