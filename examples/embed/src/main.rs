//! Embedding teamhost: a WebAssembly teammate inside your own tokio program.
//!
//! Creates a team in a temporary home, spawns the `echo` component as a
//! teammate, sends it a message as the team's lead, waits for the reply, and
//! shuts the team down gracefully. From the repository root:
//!
//! ```sh
//! (cd guests && cargo build --release)   # the guests: .wasm files in target/guests
//! cargo run -p teamhost-embed-example -- target/guests/wasm32-wasip2/release/echo.wasm
//! ```
//!
//! The API used: `Host` (create, spawn, send as lead, events, shutdown,
//! delete), `SpawnRequest` and the store's `Team::take_unread`.

use std::time::Duration;

use anyhow::Context;
use teamhost::embed::{Host, SpawnRequest};
use teamhost::home::Home;
use teamhost::store::NewTeam;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let component = std::env::args()
        .nth(1)
        .context("usage: teamhost-embed-example path/to/echo.wasm")?;
    let root = std::env::temp_dir().join(format!("teamhost-embed-{}", std::process::id()));
    let home = root.join("home");
    // The only directory the teammate sees: beside the home, never inside it
    // (a teammate must not be able to write the home: see teamhost::layout).
    let workdir = root.join("work");
    std::fs::create_dir_all(&workdir)?;

    let host = Host::new(Home::new(&home))?;
    host.create_team("embed", NewTeam::default())?;
    let mut events = host.events(); // subscribe before anything can happen
    let prompt = "You repeat what you are told.";
    let echo = SpawnRequest::new("echo", &component, prompt, &workdir);
    let info = host.spawn("embed", echo).await?;
    println!("spawned {} ({})", info.agent_id, info.color);

    host.send_as_lead("embed", "echo", "ping", Some("a test message"))?;

    // Every inbox write of this process is an event: on each one, consume the
    // lead's inbox until echo's reply is there.
    let team = host.team("embed")?;
    let reply = tokio::time::timeout(Duration::from_secs(10), async {
        loop {
            for m in team.take_unread("team-lead")? {
                println!("team-lead got from {}: {}", m.from, m.text);
                if m.from == "echo" && m.text == "ping" {
                    return anyhow::Ok(m);
                }
            }
            let _ = events.recv().await;
        }
    })
    .await
    .context("echo did not answer within 10 s")??;
    println!("echo replied {:?} ({:?})", reply.text, reply.summary);

    let report = host
        .shutdown_team("embed", "done", Duration::from_secs(10))
        .await?;
    println!("stopped {:?}, killed {:?}", report.stopped, report.killed);
    host.delete_team("embed").await?;
    std::fs::remove_dir_all(&root)?;
    Ok(())
}
