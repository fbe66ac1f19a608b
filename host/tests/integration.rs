//! Every integration test of this crate in one binary: one link of
//! wasmtime instead of one per file. Each file below is a module; shared
//! helpers are declared once here. Run one file's tests with
//! `cargo test --test integration <module>::`.

mod backend_common;
mod run_common;
mod tmux_server;

mod adopt;
mod backend_process;
mod backend_teammate;
mod backend_tmux;
mod cassette_replays;
mod cli_approval_routing;
mod cli_commands;
mod cli_hints;
mod cli_new;
mod cli_run;
mod cli_run_lead;
mod cli_status;
mod cli_team_commands;
mod cli_tooling;
mod cli_watch;
mod example_lead_team;
mod example_net_team;
mod failover;
mod failover_led;
mod foreign_readers;
mod golden;
mod hooks_external;
mod hostile_build;
mod live_view;
mod live_view_fit;
mod nats_cluster;
mod nats_faults;
mod nats_fencing;
mod nats_security;
mod nats_store;
mod network_fetch;
mod network_proxy;
mod orphans;
mod processes;
mod resume;
mod resume_led;
mod run_library;
mod run_live;
mod run_special_files;
mod stop_without_store;
mod store_mailbox;
mod store_tasks;
mod store_team;
mod team_account;
mod team_lead_key;
mod teammate_layout;
mod tools;
mod wasi_http;
