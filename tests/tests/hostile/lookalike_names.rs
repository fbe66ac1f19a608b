//! Hostile tests: names that look like someone else's. A lead
//! component (the scripted `leadscript`), the library's `Host::spawn` and a
//! manifest run by `teamhost run` each try to name a new teammate like the
//! lead (`team-lead ` with a trailing space, `team‐lead` with U+2010, a
//! zero-width space, a Cyrillic `е`, a capital `I` for `l`), the person
//! (`user`), the host (`teamhost`, `system`), a flag (`-rf`), with a bidi
//! override, or like a member already there (`Bob` beside `bob`). Each is
//! refused saying why, and nothing is made for it: no member entry, no
//! directory.

use teamhost::embed::{CatalogueEntry, SpawnRequest, TeammateState};
use teamhost::store::NewTeam;

use crate::lead_seat::{result, Led};
use crate::sandbox_support::cli;

/// The look-alikes a lead tries, as the script spells them (`\u{20}` is
/// unescaped by the script: its words are split on whitespace), each with a
/// word its refusal must hold.
const LOOKALIKES: &[(&str, &str)] = &[
    ("user", "reserved for the person"),
    ("User", "reserved for the person"),
    ("team-lead\\u{20}", "ends with whitespace"),
    ("team-lead\\u{a0}", "ends with whitespace"),
    ("team\u{2010}lead", "reads as \"team-lead\""),
    ("t\u{435}am-lead", "reads as \"team-lead\""),
    ("team-Iead", "reads as \"team-lead\""),
    ("team-lead\u{200b}", "U+200B, an invisible"),
    ("team\u{ad}-lead", "U+00AD, an invisible"),
    ("\u{202e}dael-maet", "bidi control U+202E"),
    ("-rf", "read it as an option"),
    ("teamhost", "reserved for the host's own notices"),
    ("system", "reserved for the system's notices"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_cannot_name_a_teammate_like_the_lead_the_person_the_host_a_flag_or_a_member() {
    let led = Led::new();
    let mut script = String::from("create names\nspawn worker bob hi\n");
    for (name, _) in LOOKALIKES {
        script.push_str(&format!("spawn worker {name} hi\n"));
    }
    // Like the member `bob`: by case, and with a Cyrillic `о`.
    script.push_str("spawn worker Bob hi\nspawn worker b\u{43e}b hi\n");
    script.push_str("teammates\nshutdown bob\nwait-gone bob\ndelete");
    let mut spec = led.spec(&script);
    spec.catalogue = vec![CatalogueEntry {
        auto_claim: false,
        ..CatalogueEntry::new("worker", teamhost_tests::ECHO)
    }];
    let end = led.run("names", spec).await;
    let log = led.log("names", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");

    assert_eq!(result(&log, "spawn", 0), "spawn\tOK\tbob@names", "{log}");
    for (i, (name, why)) in LOOKALIKES.iter().enumerate() {
        let line = result(&log, "spawn", i + 1);
        assert!(
            line.starts_with("spawn\tERR\tinvalid: teammate name: "),
            "{name:?}: {line}"
        );
        assert!(
            line.contains(why),
            "{name:?} is refused saying {why:?}: {line}"
        );
        assert!(
            line.contains("choose another name"),
            "says what to do: {line}"
        );
        assert!(
            !line.contains(['\u{202e}', '\u{200b}', '\u{ad}']),
            "the refusal shows no invisible character: {line:?}"
        );
    }
    for nth in [LOOKALIKES.len() + 1, LOOKALIKES.len() + 2] {
        let line = result(&log, "spawn", nth);
        assert!(
            line.starts_with("spawn\tERR\tconflict: teammate name: ")
                && line.contains("looks like \"bob\""),
            "{line}\n{log}"
        );
    }
    // While it ran, bob was its only teammate.
    let teammates = result(&log, "teammates", 0);
    let listed = teammates.strip_prefix("teammates\tOK\t").unwrap_or("");
    assert!(
        listed.starts_with("bob:worker:") && !listed.contains(','),
        "{teammates}"
    );
    assert_eq!(result(&log, "delete", 0), "delete\tOK\t", "{log}");
    // No directory was made for a refused name.
    let mut dirs: Vec<String> = std::fs::read_dir(led.tmp.path().join("work"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    assert_eq!(dirs, ["bob", "team-lead"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_library_refuses_a_lookalike_before_compiling_or_registering_anything() {
    let led = Led::new();
    led.host.create_team("lib", NewTeam::default()).unwrap();
    let dir = led.tmp.path().join("echo");
    std::fs::create_dir_all(&dir).unwrap();
    let spawn = |name: &str| {
        let req = SpawnRequest::new(name, teamhost_tests::ECHO, "hi", &dir);
        led.host.spawn("lib", req)
    };
    spawn("echo").await.unwrap();
    for (name, why) in [
        ("team-lead ", "ends with whitespace"),
        ("user", "reserved for the person"),
        ("team\u{2010}lead", "reads as \"team-lead\""),
        ("--help", "read it as an option"),
        ("Echo", "looks like \"echo\""),
        ("\u{435}cho", "looks like \"echo\""),
    ] {
        let err = spawn(name).await.unwrap_err().to_string();
        assert!(err.contains(why), "{name:?}: {err}");
    }
    let names = led
        .host
        .team("lib")
        .unwrap()
        .config()
        .unwrap()
        .member_names();
    assert_eq!(names, ["team-lead", "echo"], "only echo joined");
    // The same name twice is still the reference's `-2`, not a refusal.
    let second = spawn("echo").await.unwrap();
    assert_eq!(second.name, "echo-2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn teamhost_run_refuses_a_manifest_teammate_named_like_the_lead_and_starts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    for (name, why) in [
        ("team\u{2010}lead", "reads as \"team-lead\""),
        ("user", "reserved for the person"),
        ("-rf", "read it as an option"),
    ] {
        let file = tmp.path().join("team.toml");
        std::fs::write(
            &file,
            format!(
                "[team]\nname = \"named\"\n\n[[teammate]]\nname = {}\ncomponent = {:?}\nprompt = \"hi\"\n",
                serde_json::to_string(name).unwrap(),
                teamhost_tests::ECHO
            ),
        )
        .unwrap();
        let err = cli(&home, &["run", file.to_str().unwrap()])
            .await
            .expect_err("the name was accepted");
        let err = format!("{err:#}");
        assert!(
            err.contains("[[teammate]] #1") && err.contains(why),
            "{name:?}: {err}"
        );
        assert!(
            !home.join("teams").join("named").exists(),
            "{name:?}: a team was made"
        );
    }
}
