//! `examples/net-team` end to end, as its README runs it: the LLM teammate
//! (cassettes) installs `greeting` with pip from a package index served on
//! 127.0.0.1:47321, through its proxy; the index's name is not allowed, so
//! the first connection asks, and the person answers at the live view with
//! `A` (allow, and remember the host for the run). Real `teamhost run` in a
//! real terminal (tmux), real pip in the teammate's namespace, a real HTTP
//! server.
//!
//! Checked: the run ends 0 with the task completed, the package is in
//! `work/deps/`, one question was asked for the two connections pip made,
//! and the teammate's network record (`installer.network.json`) and the
//! person's decision say so.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use crate::cassette_replays::{absolute_components, copy_tree, repo};
use crate::tmux_server::TmuxServer as Tmux;

/// The port the example's manifest and recorded commands name.
const PORT: u16 = 47321;

/// Serves the files under `root` on 127.0.0.1:[`PORT`] (bound before this
/// returns, so nothing races its start), one request per connection.
fn serve(root: PathBuf) {
    let listener = TcpListener::bind(("127.0.0.1", PORT))
        .unwrap_or_else(|e| panic!("the example's index port {PORT} is taken: {e}"));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut line = String::new();
            if BufReader::new(&conn).read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split(' ').nth(1).unwrap_or("/").to_string();
            let mut file = root.join(path.trim_start_matches('/').split('#').next().unwrap());
            if file.is_dir() {
                file = file.join("index.html");
            }
            let reply = match std::fs::read(&file) {
                Ok(body) if !path.contains("..") => {
                    let kind = if file.extension().is_some_and(|e| e == "html") {
                        "text/html"
                    } else {
                        "application/octet-stream"
                    };
                    let mut r = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes();
                    r.extend(body);
                    r
                }
                _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    .to_vec(),
            };
            let _ = conn.write_all(&reply);
        }
    });
}

fn copy_example(dir: &Path) {
    copy_tree(&repo().join("examples/net-team"), dir);
    let manifest = std::fs::read_to_string(dir.join("team.toml")).unwrap();
    std::fs::write(dir.join("team.toml"), absolute_components(&manifest)).unwrap();
    std::fs::create_dir_all(dir.join("work")).unwrap();
    let built = std::process::Command::new("python3")
        .arg(dir.join("index/build"))
        .arg(dir.join("served"))
        .output()
        .unwrap();
    assert!(built.status.success(), "{built:?}");
}

#[test]
fn the_person_approves_the_index_at_the_live_view_and_pip_installs_through_the_proxy() {
    if !teamhost::tools::confine::namespaces() {
        eprintln!("skipped: Bash gets no namespaces here, so no network");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("net-team");
    copy_example(&dir);
    serve(dir.join("served"));
    let home = tmp.path().join("home");
    let exit_file = tmp.path().join("exit-code");
    let tmux = Tmux {
        sock: tmp.path().join("sock"),
    };
    tmux.run_in_pane(
        &format!(
            "cd '{dir}' && '{bin}' --home '{home}' run team.toml --keep --teammate-mode in-process",
            dir = dir.display(),
            bin = env!("CARGO_BIN_EXE_teamhost"),
            home = home.display(),
        ),
        &exit_file,
    );
    tmux.view_shows(&["team net-team", "installer permission asks: Network"]);
    // Allow, and remember pkgs.test for the rest of the run.
    tmux.ok(&["send-keys", "-t", "live", "A"]);
    let code = tmux.wait_done(&exit_file);
    let screen = tmux.ok(&["capture-pane", "-p", "-S", "-200", "-t", "live"]);
    assert_eq!(code, "0", "the run failed; the pane shows:\n{screen}");
    assert!(
        screen.contains("net-team: 1/1 task(s) completed"),
        "{screen}"
    );
    let installed = dir.join("work/deps/greeting/__init__.py");
    assert!(
        std::fs::read_to_string(&installed)
            .unwrap_or_default()
            .contains("hello from the local index"),
        "pip did not install greeting:\n{screen}"
    );
    // pip connected twice (the index page, the wheel) and asked once.
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(home.join("logs/net-team/installer.network.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["reached"][format!("pkgs.test:{PORT}")],
        2,
        "{record}"
    );
    assert!(
        screen.contains("Network from installer: allowed by the person"),
        "{screen}"
    );
    assert!(
        screen.contains(&format!("network: reached pkgs.test:{PORT} ×2")),
        "{screen}"
    );
}
