//! The lead's seat end to end (issue 29): a scripted lead component
//! (`guests/leadscript`) started by `Host::start_lead` forms its team,
//! creates a task, spawns two teammates from the catalogue, answers a plan
//! and a permission request, shuts them down and deletes the team, on real
//! components and files.

use std::path::{Path, PathBuf};

use teamhost::embed::{CatalogueEntry, Host, HostOptions, LeadSpec, TeammateState};
use teamhost::home::Home;
use teamhost::sandbox::{PermissionMode, ToolRules};

use crate::common::LIMIT;

/// A host in a temporary home and where its lead and teammates work.
pub struct Led {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub host: Host,
}

impl Led {
    pub fn new() -> Led {
        Led::with_options(HostOptions::default())
    }

    /// A host with `opts`.
    pub fn with_options(opts: HostOptions) -> Led {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let host = Host::with_options(Home::new(&home), opts).unwrap();
        Led { tmp, home, host }
    }

    /// A lead spec running `script`, teammates under `{tmp}/work`.
    pub fn spec(&self, script: &str) -> LeadSpec {
        LeadSpec::new(
            teamhost_tests::LEADSCRIPT,
            script,
            self.tmp.path().join("work/team-lead"),
            self.tmp.path().join("work"),
        )
    }

    /// The directory of the teammate `name`.
    pub fn dir(&self, name: &str) -> PathBuf {
        self.tmp.path().join("work").join(name)
    }

    /// The guest log of `name` in `team`.
    pub fn log(&self, team: &str, name: &str) -> String {
        std::fs::read_to_string(
            self.home
                .join("logs")
                .join(team)
                .join(format!("{name}.log")),
        )
        .unwrap_or_default()
    }

    /// Starts the lead and waits for its end.
    pub async fn run(&self, team: &str, spec: LeadSpec) -> TeammateState {
        self.host.start_lead(team, spec).await.unwrap();
        match tokio::time::timeout(LIMIT * 2, self.host.wait_lead(team)).await {
            Ok(end) => end.expect("the lead runs in this host"),
            Err(_) => panic!(
                "the lead did not finish within {:?}; its log:\n{}",
                LIMIT * 2,
                self.log(team, "team-lead")
            ),
        }
    }
}

/// The lead's result line of `cmd` (the first one, or the `nth`).
pub fn result<'a>(log: &'a str, cmd: &str, nth: usize) -> &'a str {
    log.lines()
        .filter(|l| l.split('\t').next() == Some(cmd))
        .nth(nth)
        .unwrap_or_else(|| panic!("no {nth}th {cmd} line in the lead's log:\n{log}"))
}

/// A hostile-guest catalogue entry: no auto-claim, acceptEdits at most.
pub fn hostile_entry(name: &str) -> CatalogueEntry {
    CatalogueEntry {
        max_mode: PermissionMode::AcceptEdits,
        auto_claim: false,
        ..CatalogueEntry::new(name, teamhost_tests::HOSTILE)
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scripted_lead_forms_spawns_answers_shuts_down_and_deletes_its_team() {
    let led = Led::new();
    let script = "\
create ignored-name A team led by a script
task Count the words
spawn planner p1 mode=plan plan
spawn asker a1 mode=default write-file x.txt hello
wait-request plan
answer-plan approve acceptEdits
wait-message p1 plan/write-after
wait-request permission
answer-permission allow
teammates
shutdown p1
shutdown a1
wait-gone p1
wait-gone a1
delete
teammates";
    let mut spec = led.spec(script);
    spec.catalogue = vec![hostile_entry("planner"), {
        // At most acceptEdits, so the lead may allow its writes; spawned in
        // default mode, so it asks for each.
        let mut e = hostile_entry("asker");
        e.rules = ToolRules::new(["Read"], Vec::<String>::new()).unwrap();
        e
    }];
    let end = led.run("scripted", spec).await;
    let log = led.log("scripted", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");
    // The host names the team: the guest's name is ignored, and the real
    // one comes back.
    assert_eq!(result(&log, "create", 0), "create\tOK\tscripted", "{log}");
    assert_eq!(result(&log, "task", 0), "task\tOK\t#1");
    assert_eq!(result(&log, "spawn", 0), "spawn\tOK\tp1@scripted");
    assert_eq!(result(&log, "spawn", 1), "spawn\tOK\ta1@scripted");
    assert!(result(&log, "wait-request", 0).contains("from p1"), "{log}");
    assert!(
        result(&log, "answer-plan", 0).starts_with("answer-plan\tOK"),
        "{log}"
    );
    assert!(result(&log, "wait-request", 1).contains("from a1"), "{log}");
    assert!(
        result(&log, "answer-permission", 0).starts_with("answer-permission\tOK"),
        "{log}"
    );
    assert!(
        result(&log, "teammates", 0).contains("p1:planner:")
            && result(&log, "teammates", 0).contains("a1:asker:"),
        "{log}"
    );
    assert!(
        result(&log, "shutdown", 0).starts_with("shutdown\tOK\tshutdown-"),
        "{log}"
    );
    assert_eq!(result(&log, "delete", 0), "delete\tOK\t");
    // Within the deleting turn the team is no more; the run ends with it.
    assert!(
        result(&log, "teammates", 1).starts_with("teammates\tERR\tconflict: "),
        "{log}"
    );
    // The answers reached the teammates: the plan's approval let p1 write,
    // the permission let a1's write run.
    assert_eq!(read(&led.dir("p1").join("done.txt")), "done");
    assert_eq!(read(&led.dir("a1").join("x.txt")), "hello");
    // The team is gone.
    let team = led.host.team("scripted").unwrap();
    assert!(!team.try_exists().unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawn_before_create_team_is_a_conflict_and_the_goal_is_the_first_message() {
    let led = Led::new();
    let mut spec = led.spec("spawn asker a1 hi\necho the goal was read\ncreate t\ndelete");
    spec.catalogue = vec![hostile_entry("asker")];
    let end = led.run("unformed", spec).await;
    let log = led.log("unformed", "team-lead");
    assert_eq!(end, TeammateState::Completed, "{log}");
    let spawn = result(&log, "spawn", 0);
    assert!(
        spawn.starts_with("spawn\tERR\tconflict: ") && spawn.contains("TeamCreate"),
        "{log}"
    );
    assert_eq!(result(&log, "echo", 0), "echo\tOK\tthe goal was read");
}
