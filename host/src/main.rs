//! The `teamhost` binary: parse arguments, send diagnostics to their own
//! channel, run, report errors on stderr.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use tracing_subscriber::fmt::writer::BoxMakeWriter;

fn main() -> std::process::ExitCode {
    // Before any thread starts: one malloc arena per core (`embed::allocator`).
    teamhost::embed::limit_malloc_arenas();
    let (args, ignored) = teamhost::cli::tolerate_unknown_flags(std::env::args_os().collect());
    for warning in ignored {
        eprintln!("{warning}");
    }
    let cli = teamhost::cli::Cli::parse_args(args);
    diagnostics(&cli);
    match teamhost::cli::run(cli) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", teamhost::cli::error_text(&e));
            std::process::ExitCode::FAILURE
        }
    }
}

/// Where the host's diagnostics (tracing) go: never into the lines `run`
/// prints, so they cannot land between its events.
///
/// | when | where | level |
/// |---|---|---|
/// | `TEAMHOST_LOG` or `RUST_LOG` is set | stderr (held back while the live view is up) | that filter |
/// | `teamhost teammate` (its stderr is its log file) | stderr | warnings |
/// | otherwise | appended to `{home}/logs/teamhost.log`, made at the first line (stderr when it cannot be) | warnings (the notify crate's errors only) |
fn diagnostics(cli: &teamhost::cli::Cli) {
    let asked = ["TEAMHOST_LOG", "RUST_LOG"]
        .into_iter()
        .find_map(|var| tracing_subscriber::EnvFilter::try_from_env(var).ok());
    let to_stderr = asked.is_some() || matches!(cli.command, teamhost::cli::Command::Teammate(_));
    // The notify crate warns when it removes the watch of a directory that
    // is gone (a deleted team's): the kernel removed it already, nothing is
    // wrong; its errors still show.
    let filter =
        asked.unwrap_or_else(|| tracing_subscriber::EnvFilter::new("warn,notify::inotify=error"));
    let home_log = (!to_stderr)
        .then(|| teamhost::home::Home::resolve(cli.home.as_deref()).ok())
        .flatten()
        .map(|home| home.logs().join("teamhost.log"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter);
    match home_log {
        Some(path) => {
            let log = Arc::new(HomeLog {
                path,
                file: OnceLock::new(),
            });
            builder
                .with_writer(BoxMakeWriter::new(move || HomeLogWriter(log.clone())))
                .with_ansi(false)
                .init();
        }
        None => builder
            .with_writer(|| teamhost::view::StderrUnlessViewing)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .without_time()
            .init(),
    }
}

/// The home's diagnostics file, opened (and its directory made) at the
/// first line, so a command that logs nothing leaves no file.
struct HomeLog {
    path: PathBuf,
    /// `None`: it could not be opened; lines go to stderr.
    file: OnceLock<Option<Mutex<std::fs::File>>>,
}

struct HomeLogWriter(Arc<HomeLog>);

impl Write for HomeLogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let file = self.0.file.get_or_init(|| {
            let path = &self.0.path;
            path.parent()
                .map_or(Ok(()), std::fs::create_dir_all)
                .and_then(|()| {
                    std::fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(path)
                })
                .ok()
                .map(Mutex::new)
        });
        match file {
            Some(f) => f.lock().unwrap_or_else(|p| p.into_inner()).write(buf),
            None => teamhost::view::StderrUnlessViewing.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
