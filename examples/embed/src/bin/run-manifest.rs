//! Running a whole team from your own program: a `team.toml` through the
//! library's run lifecycle (`teamhost::run`), the same one `teamhost run`
//! drives, without the CLI. A manifest with `[lead]` is led by its lead
//! component; its `[model]` table (a replay from cassettes, say) decides the
//! model calls. Ctrl-C stops the work; the team is shut down gracefully and
//! deleted either way. From the repository root:
//!
//! ```sh
//! (cd guests && cargo build --release)
//! cargo run -p teamhost-embed-example --bin run-manifest -- examples/wordcount/team.toml
//! ```
//!
//! The API used: `RunPlan::load`, `model_access`, `Run::start`,
//! `until_done`, `shut_down`, `finish`, and a `Narrator` that prints the
//! run's lines.

use std::time::Instant;

use anyhow::Context;
use teamhost::embed::{Host, HostOptions};
use teamhost::home::Home;
use teamhost::run::{model_access, ModelChoice, Narrator, Run, RunPlan};

/// Prints each of the run's lines with the seconds since it began.
struct Print(Instant);

impl Narrator for Print {
    fn line(&self, who: &str, what: String) {
        println!("{:6.2}s {who:>9}  {what}", self.0.elapsed().as_secs_f64());
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let manifest = std::env::args()
        .nth(1)
        .context("usage: run-manifest path/to/team.toml")?;
    // A home of its own, so the example never touches ~/.claude.
    let home = std::env::temp_dir().join(format!("teamhost-run-{}", std::process::id()));
    let say = Print(Instant::now());

    let plan = RunPlan::load(&manifest)?;
    let models = model_access(&home, &ModelChoice::default(), Some(&plan.manifest.model))?;
    let options = HostOptions {
        models,
        ..Default::default()
    };
    let host = Host::with_options(Home::new(&home), options)?;
    let mut run = Run::start(&host, plan, &say).await?;
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
        "Ctrl-C"
    };
    let ended = run.until_done(&say, ctrl_c).await?;
    let shutdown = run.shut_down(&say, &ended).await?;
    let finished = run.finish(ended, shutdown).await?;

    for task in &finished.tasks {
        println!(
            "task #{} {:?}: {} by {}",
            task.id,
            task.subject,
            task.status.as_str(),
            task.owner.as_deref().unwrap_or("nobody")
        );
    }
    println!(
        "ended {}; {} message(s) to the lead; stopped {:?}; {} decision(s)",
        finished.ended.name(),
        finished.messages.to_lead,
        finished.shutdown.stopped,
        finished.decisions.len()
    );
    std::fs::remove_dir_all(&home)?;
    match finished.error() {
        None => Ok(()),
        Some(why) => anyhow::bail!("the run failed: {why}"),
    }
}
