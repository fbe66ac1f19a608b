//! `teamhost check`, `doctor`, `completions`, `man` and `schema` through
//! the real binary.

use std::path::Path;
use std::process::{Command, Output};

fn teamhost(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_teamhost"))
        .arg("--home")
        .arg(home)
        .args(args)
        .output()
        .unwrap()
}

fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A manifest of team `checked` in `dir` with one teammate running
/// `component`, plus `extra` in its `[[teammate]]` table.
fn manifest(dir: &Path, component: &Path, extra: &str) -> std::path::PathBuf {
    let file = dir.join("team.toml");
    std::fs::write(
        &file,
        format!(
            "[team]\nname = \"checked\"\n[[teammate]]\nname = \"w\"\ncomponent = {component:?}\nprompt = \"p\"\n{extra}\n[[task]]\nsubject = \"s\"\n"
        ),
    )
    .unwrap();
    file
}

#[test]
fn check_compiles_every_component_into_the_cache_and_creates_no_team() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let file = manifest(tmp.path(), Path::new(teamhost_tests::WORKER), "");
    let out = teamhost(&home, &["check", file.to_str().unwrap()]);
    assert!(out.status.success(), "{}", shown(&out));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("the manifest is valid") && said.contains("ok "),
        "{said}"
    );
    let cache = home.join("cache/components");
    assert!(
        std::fs::read_dir(&cache).unwrap().next().is_some(),
        "nothing compiled into {}",
        cache.display()
    );
    assert!(!home.join("teams").exists(), "a team was created");
    assert!(!tmp.path().join("work").exists(), "a directory was made");
}

#[test]
fn check_names_the_bad_key_and_the_component_that_cannot_run() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let file = manifest(
        tmp.path(),
        Path::new(teamhost_tests::WORKER),
        "memory_bytes = 1",
    );
    let out = teamhost(&home, &["check", file.to_str().unwrap()]);
    assert!(!out.status.success(), "{}", shown(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("team.toml") && err.contains("memory_bytes"),
        "{err}"
    );

    let junk = tmp.path().join("junk.wasm");
    std::fs::write(&junk, b"not wasm").unwrap();
    let file = manifest(tmp.path(), &junk, "");
    let out = teamhost(&home, &["check", file.to_str().unwrap(), "--json"]);
    assert!(!out.status.success(), "{}", shown(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("junk.wasm") && err.contains("teammate w"),
        "{err}"
    );
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["components"][0]["error"].is_string(), "{report}");

    let out = teamhost(
        &home,
        &["check", tmp.path().join("none.toml").to_str().unwrap()],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("no manifest at"));
    assert!(!home.join("teams").exists());
}

#[test]
fn check_refuses_teammates_named_like_the_lead_the_person_or_a_flag() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    for (name, why) in [
        ("team-lead ", "ends with whitespace"),
        ("team\u{2010}lead", "reads as \"team-lead\""),
        ("team-lead\u{200b}", "U+200B, an invisible"),
        ("\u{202e}dael-maet", "bidi control U+202E"),
        ("user", "reserved for the person"),
        ("-rf", "read it as an option"),
    ] {
        let file = tmp.path().join("team.toml");
        std::fs::write(
            &file,
            format!(
                "[team]\nname = \"checked\"\n[[teammate]]\nname = {}\ncomponent = {:?}\nprompt = \"p\"\n",
                serde_json::to_string(name).unwrap(),
                teamhost_tests::WORKER
            ),
        )
        .unwrap();
        let out = teamhost(&home, &["check", file.to_str().unwrap()]);
        assert!(!out.status.success(), "{name:?}: {}", shown(&out));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("[[teammate]] #1")
                && err.contains(why)
                && err.contains("choose another name"),
            "{name:?}: {err}"
        );
        assert!(
            !err.contains(['\u{202e}', '\u{200b}']),
            "the refusal shows no invisible character: {err:?}"
        );
    }
    assert!(!home.join("teams").exists(), "a team was created");
}

#[test]
fn doctor_gives_one_line_per_check_and_a_fix_for_each_missing_one() {
    let tmp = tempfile::tempdir().unwrap();
    let out = teamhost(tmp.path(), &["doctor", "--json"]);
    assert!(out.status.success(), "{}", shown(&out));
    let checks: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let names: Vec<&str> = checks
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["check"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "home",
            "landlock",
            "seccomp",
            "cgroups",
            "namespaces",
            "tmux",
            "nats-server",
            "wasm32-wasip2",
            "claude-code"
        ]
    );
    // It names the Claude Code versions teamhost is tested with, found or not.
    let claude = checks[8]["detail"].as_str().unwrap();
    assert!(
        claude.contains("2.1.197") && claude.contains("2.1.332"),
        "{claude}"
    );
    for c in checks.as_array().unwrap() {
        assert_eq!(c["ok"] == false, c["fix"].is_string(), "{c}");
    }
    // tmux is what this suite's tmux tests use: the answer matches PATH.
    let tmux = Command::new("tmux")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    assert_eq!(checks[5]["ok"], tmux, "{}", checks[5]);
    // A nats-server older than 2.9.21 is found, with what it cannot do: a
    // cluster's replicated compare-and-swap.
    let nats = Command::new("nats-server")
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).to_string());
    if let Some(v) = nats {
        let v = v.trim().rsplit('v').next().unwrap_or("").to_string();
        let n: Vec<u64> = v.split('.').filter_map(|p| p.parse().ok()).collect();
        let old = n.len() == 3 && (n[0], n[1], n[2]) < (2, 9, 21);
        assert_eq!(checks[6]["ok"], true, "{}", checks[6]);
        assert_eq!(
            checks[6]["note"]
                .as_str()
                .is_some_and(|n| n.contains("2.9.21 or newer")),
            old,
            "{v}: {}",
            checks[6]
        );
    }

    let out = teamhost(tmp.path(), &["doctor"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("ok ") && l.contains("home")),
        "{text}"
    );
    // An unusable home is one more finding, not a crash.
    let file = tmp.path().join("file");
    std::fs::write(&file, "").unwrap();
    let out = teamhost(&file, &["doctor"]);
    assert!(out.status.success(), "{}", shown(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.starts_with("missing") && l.contains("home")),
        "{text}"
    );
    assert!(text.contains("--home"), "{text}");
}

#[test]
fn completions_man_and_schema_print_what_each_tool_reads() {
    let tmp = tempfile::tempdir().unwrap();
    for (shell, mark) in [
        ("bash", "complete -F _teamhost"),
        ("zsh", "#compdef teamhost"),
        ("fish", "complete -c teamhost"),
    ] {
        let out = teamhost(tmp.path(), &["completions", shell]);
        assert!(out.status.success(), "{}", shown(&out));
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains(mark), "{shell}: {text:.300}");
        assert!(text.contains("logs") && text.contains("doctor"), "{shell}");
    }
    let out = teamhost(tmp.path(), &["completions", "tcsh"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("bash"));

    let out = teamhost(tmp.path(), &["man"]);
    assert!(out.status.success(), "{}", shown(&out));
    let roff = String::from_utf8_lossy(&out.stdout);
    assert!(
        roff.starts_with(".ie") || roff.contains(".TH teamhost"),
        "{roff:.300}"
    );
    assert!(roff.contains("ps") && roff.contains("stop"), "{roff:.300}");
    // Every page teamhost(1) names is there: by name, and all at once
    // with --dir.
    let out = teamhost(tmp.path(), &["man", "run"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains(".TH teamhost-run 1"));
    let dir = tmp.path().join("man1");
    let out = teamhost(tmp.path(), &["man", "--dir", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", shown(&out));
    // The pages teamhost(1) names (`teamhost\-run(1)`, …).
    let named: Vec<String> = roff
        .lines()
        .filter_map(|l| l.strip_suffix("(1)"))
        .filter(|l| l.starts_with("teamhost\\-"))
        .map(|l| l.replace("\\-", "-"))
        .collect();
    assert!(named.len() > 10, "{named:?}");
    for page in named {
        let file = dir.join(format!("{page}.1"));
        assert!(file.is_file(), "{} named, not written", file.display());
    }
    let out = teamhost(tmp.path(), &["man", "nope"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("one per subcommand"));

    let out = teamhost(tmp.path(), &["schema"]);
    assert!(out.status.success(), "{}", shown(&out));
    let schema: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(schema["required"], serde_json::json!(["team"]));
    assert!(schema["$defs"]["limits"]["properties"]["cpu_per_turn_secs"].is_object());
    assert!(!tmp.path().join("teams").exists(), "they need no home");
}

#[test]
fn help_names_each_environment_variable_without_a_value() {
    // An unset variable read as `[env: NAME=]` (an empty value), and a set
    // one would show its value: a credentials path, a store URL.
    let tmp = tempfile::tempdir().unwrap();
    for command in [
        &["run", "--help"][..],
        &["watch", "--help"],
        &["teammate", "--help"],
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_teamhost"))
            .args(command)
            .env("TEAMHOST_STORE_CREDS", tmp.path().join("secret.creds"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("[env: TEAMHOST_STORE_CA]"),
            "{command:?}: {text}"
        );
        assert!(
            !text.contains("=]") && !text.contains("secret.creds"),
            "{command:?}: {text}"
        );
    }
}
