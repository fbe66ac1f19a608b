//! Running a team through the library ([`teamhost::run::Run`]), with no
//! `teamhost` process: real `worker` components on a real home, and a team
//! led by the scripted lead component (`guests/leadscript`). How the work
//! ends (done, stuck, timed out, stopped from outside), what
//! [`teamhost::run::Finished`] says about it, and what `Run::start` refuses
//! (a layout that exposes the host, a team that exists, nothing to resume)
//! before it creates anything.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use teamhost::embed::{Host, HostOptions};
use teamhost::home::Home;
use teamhost::run::{Ended, Narrator, Run, RunPlan, Start};
use tokio::sync::Notify;

/// Safety bound of every run here.
const LIMIT: Duration = Duration::from_secs(120);

/// [`project`](crate::run_common::project)'s two word counters and four
/// tasks, with the home beside the manifest: the directory, the manifest's
/// path and the home.
fn project(name: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (dir, manifest) = crate::run_common::project(name, "");
    let home = dir.path().join("home");
    (dir, manifest, home)
}

/// Keeps every line, and wakes whoever waits for the work phase to start.
#[derive(Default)]
struct Recorder {
    lines: Mutex<Vec<String>>,
    working: Notify,
}

impl Recorder {
    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }
}

impl Narrator for Recorder {
    fn line(&self, who: &str, what: String) {
        self.lines.lock().unwrap().push(format!("{who}: {what}"));
    }

    fn work_started(&self, deadline: Instant) {
        assert!(deadline > Instant::now() - Duration::from_secs(1));
        self.working.notify_one();
    }
}

fn host(home: &Path) -> Host {
    Host::with_options(Home::new(home), HostOptions::default()).unwrap()
}

/// Runs `plan` through every phase, `stop` ending the work when it
/// resolves; bounded by [`LIMIT`].
async fn run_through(
    host: &Host,
    plan: RunPlan,
    narrator: &Recorder,
    stop: impl std::future::Future<Output = &'static str>,
) -> teamhost::run::Finished {
    tokio::time::timeout(LIMIT, async {
        let mut run = Run::start(host, plan, narrator).await.unwrap();
        let ended = run.until_done(narrator, stop).await.unwrap();
        let shutdown = run.shut_down(narrator, &ended).await.unwrap();
        run.finish(ended, shutdown).await.unwrap()
    })
    .await
    .expect("the run ends within the bound")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_completes_its_tasks_shuts_down_and_deletes_its_team() {
    let (_dir, manifest, home) = project("lib-done");
    let host = host(&home);
    let narrator = Recorder::default();
    let plan = RunPlan::load(&manifest).unwrap();
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    assert_eq!(finished.ended, Ended::Completed, "{finished:#?}");
    assert_eq!(finished.error(), None, "{finished:#?}");
    assert_eq!(finished.tasks.len(), 4);
    assert!(finished
        .tasks
        .iter()
        .all(|t| t.status == teamhost::store::TaskStatus::Completed));
    let mut stopped = finished.shutdown.stopped.clone();
    stopped.sort();
    assert_eq!(stopped, ["ann", "bob"], "{finished:#?}");
    assert!(finished.shutdown.killed.is_empty());
    assert!(finished.messages.to_lead > 0, "{:?}", finished.messages);
    assert!(!finished.kept);
    assert!(
        !home.join("teams/lib-done").exists(),
        "the team was deleted"
    );
    assert!(!home.join("tasks/lib-done").exists());
    let lines = narrator.lines();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("run: created team lib-done with 4 task(s)")),
        "{lines:#?}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("ann: joins: worker.wasm")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_nobody_can_finish_ends_the_run_stuck_naming_it() {
    let (dir, manifest, home) = project("lib-stuck");
    std::fs::remove_file(dir.path().join("data/b.txt")).unwrap();
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    plan.keep = true;
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    let Ended::Stuck(why) = &finished.ended else {
        panic!("not stuck: {finished:#?}");
    };
    assert!(
        why.starts_with("every teammate is idle but 2 task(s)"),
        "{why}"
    );
    assert!(why.contains("#2 \"Count b\""), "{why}");
    let error = finished.error().expect("a stuck run fails");
    assert!(error.starts_with(why.as_str()), "{error}");
    assert!(finished.kept);
    assert!(home.join("teams/lib-stuck/config.json").exists(), "kept");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_timeout_ends_timed_out_and_still_shuts_down() {
    let (_dir, manifest, home) = project("lib-timeout");
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    // No work phase can be done the instant it starts: the tasks are open.
    plan.timeout = Duration::ZERO;
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    assert_eq!(finished.ended, Ended::TimedOut(0), "{finished:#?}");
    let error = finished.error().expect("a timed-out run fails");
    assert!(error.contains("the work was not done after 0s"), "{error}");
    assert!(finished.teammates.iter().all(|t| t.state.is_finished()));
    assert!(!home.join("teams/lib-timeout").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stop_from_outside_interrupts_the_work_in_its_own_words() {
    let (_dir, manifest, home) = project("lib-stop");
    let host = host(&home);
    let narrator = Arc::new(Recorder::default());
    let plan = RunPlan::load(&manifest).unwrap();
    let woken = narrator.clone();
    // Resolves once the work phase has started: the interruption lands in
    // the work, not in the spawns.
    let stop = async move {
        woken.working.notified().await;
        "stopped by the test"
    };
    let finished = run_through(&host, plan, &narrator, stop).await;
    assert_eq!(
        finished.ended,
        Ended::Interrupted("stopped by the test"),
        "{finished:#?}"
    );
    assert_eq!(
        finished.ended.reason(),
        "the run was interrupted (stopped by the test)"
    );
    let error = finished.error().expect("an interrupted run fails");
    assert!(
        error.starts_with("interrupted (stopped by the test)"),
        "{error}"
    );
    assert!(finished.teammates.iter().all(|t| t.state.is_finished()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_refuses_a_teammate_directory_holding_the_home_and_creates_nothing() {
    let (dir, manifest, home) = project("lib-layout");
    // A hostile manifest: bob works in the directory that holds the home,
    // where it could rewrite the host's records.
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = text.replacen("cwd = \"data\"", "cwd = \".\"", 2);
    std::fs::write(&manifest, text).unwrap();
    let host = host(&home);
    let narrator = Recorder::default();
    let plan = RunPlan::load(&manifest).unwrap();
    let refused = match Run::start(&host, plan, &narrator).await {
        Ok(_) => panic!("a layout exposing the home was accepted"),
        Err(e) => format!("{e:#}"),
    };
    assert!(refused.contains("ann"), "{refused}");
    assert!(
        !home.join("teams/lib-layout").exists(),
        "nothing was created"
    );
    assert!(narrator.lines().is_empty(), "{:?}", narrator.lines());
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_refuses_an_existing_team_and_a_resume_of_none() {
    let (_dir, manifest, home) = project("lib-exists");
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    plan.start = Start::Resume;
    let none = match Run::start(&host, plan.clone(), &narrator).await {
        Ok(_) => panic!("resumed a team that does not exist"),
        Err(e) => format!("{e:#}"),
    };
    assert!(none.contains("there is nothing to resume"), "{none}");
    assert!(!home.join("teams/lib-exists").exists());

    host.create_team("lib-exists", Default::default()).unwrap();
    let before = std::fs::read(home.join("teams/lib-exists/config.json")).unwrap();
    plan.start = Start::Fresh;
    let exists = match Run::start(&host, plan, &narrator).await {
        Ok(_) => panic!("ran over an existing team"),
        Err(e) => format!("{e:#}"),
    };
    assert!(exists.contains("already exists"), "{exists}");
    assert!(exists.contains("--resume"), "{exists}");
    let after = std::fs::read(home.join("teams/lib-exists/config.json")).unwrap();
    assert_eq!(before, after, "the existing team is untouched");
    let tasks = host.team("lib-exists").unwrap().list_tasks().unwrap();
    assert!(tasks.is_empty(), "no task was seeded: {tasks:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_refused_for_an_existing_team_makes_no_default_directory() {
    // A teammate without `cwd` works in `work/NAME` beside the manifest,
    // made by the run: not by a run that is refused.
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("team.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"lib-nodirs\"\n[[teammate]]\nname = \"e1\"\ncomponent = {:?}\nprompt = \"hi\"\n",
            teamhost_tests::ECHO
        ),
    )
    .unwrap();
    let home = dir.path().join("home");
    let host = host(&home);
    host.create_team("lib-nodirs", Default::default()).unwrap();
    let narrator = Recorder::default();
    let plan = RunPlan::load(&manifest).unwrap();
    let refused = match Run::start(&host, plan, &narrator).await {
        Ok(_) => panic!("ran over an existing team"),
        Err(e) => format!("{e:#}"),
    };
    assert!(refused.contains("already exists"), "{refused}");
    assert!(
        !dir.path().join("work").exists(),
        "a refused run made the teammate's default directory"
    );
}

/// A manifest for team `name` with one `echo` catalogue entry, led by the
/// scripted lead (`guests/leadscript`) whose goal is `script`.
fn led_project(name: &str, script: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("team.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = {name:?}\n[lead]\ncomponent = {:?}\ngoal = {script:?}\n[[catalogue]]\nname = \"echoer\"\ncomponent = {:?}\nauto_claim = false\n",
            teamhost_tests::LEADSCRIPT,
            teamhost_tests::ECHO
        ),
    )
    .unwrap();
    let home = dir.path().join("home");
    (dir, manifest, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_led_run_ends_when_its_lead_deletes_the_team() {
    let script =
        "create x\nspawn echoer e1 hello\nwait-message e1 hello\nshutdown e1\nwait-gone e1\ndelete";
    let (dir, manifest, home) = led_project("lib-led", script);
    let host = host(&home);
    let narrator = Recorder::default();
    let plan = RunPlan::load(&manifest).unwrap();
    assert!(plan.is_led(), "a manifest with [lead] is led by it");
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    assert_eq!(finished.ended, Ended::Completed, "{finished:#?}");
    assert_eq!(finished.error(), None, "{finished:#?}");
    assert!(!home.join("teams/lib-led").exists(), "the lead deleted it");
    let log = std::fs::read_to_string(home.join("logs/lib-led/team-lead.log")).unwrap();
    assert!(log.contains("spawn\tOK\te1@lib-led"), "{log}");
    assert!(log.contains("delete\tOK"), "{log}");
    assert!(
        dir.path().join("work/e1").is_dir(),
        "e1 worked beside the manifest"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_led_run_whose_lead_never_finishes_times_out_and_stops_what_it_left() {
    // The lead forms the team, spawns p1 and tells it to hold a Bash call
    // open: p1 asks the person ([approvals]), who never answers, so a
    // request waits (the person could still answer it) and only the
    // timeout ends the run.
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("team.toml");
    let script = "create x\nspawn prober p1 hello\nsay p1 hold\nwait-message p1 never-said";
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"lib-led-slow\"\n[lead]\ncomponent = {:?}\ngoal = {script:?}\n[[catalogue]]\nname = \"prober\"\ncomponent = {:?}\nauto_claim = false\n[approvals]\ndefault = \"person\"\n",
            teamhost_tests::LEADSCRIPT,
            teamhost_tests::PROBE
        ),
    )
    .unwrap();
    let home = dir.path().join("home");
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    plan.timeout = Duration::from_secs(3);
    plan.shutdown_timeout = Duration::from_secs(10);
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    assert_eq!(finished.ended, Ended::TimedOut(3), "{finished:#?}");
    assert!(finished.error().is_some());
    assert!(
        finished.teammates.iter().all(|t| t.state.is_finished()),
        "the lead and p1 were stopped: {:?}",
        finished.teammates
    );
    assert!(
        !home.join("teams/lib-led-slow").exists(),
        "deleted, not kept"
    );
}

/// The lead's turns in `finished`.
fn lead_turns(finished: &teamhost::run::Finished) -> u64 {
    finished
        .teammates
        .iter()
        .find(|t| t.name == "team-lead")
        .map(|t| t.turns)
        .expect("the lead is listed")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_left_with_nothing_to_wake_it_is_told_once_then_the_run_ends_stuck() {
    // The lead forms the team and stops acting (as one whose model calls
    // ran out before it spawned anyone): nothing would ever wake it.
    let (_dir, manifest, home) = led_project("lib-led-idle", "create x");
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    // Far beyond what the test takes: the run ends by the rule, not by this.
    plan.timeout = LIMIT;
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    let Ended::Stuck(why) = &finished.ended else {
        panic!("{finished:#?}")
    };
    assert!(
        why.contains("nothing was left to wake the lead") && why.contains("spawned no teammate"),
        "{why}"
    );
    assert_eq!(
        lead_turns(&finished),
        2,
        "the goal, then the telling: {finished:#?}"
    );
    assert!(finished.error().is_some());
    assert!(
        !home.join("teams/lib-led-idle").exists(),
        "deleted, not kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_whose_teammates_went_idle_and_who_does_nothing_ends_stuck_naming_them() {
    // e1 answers the lead's prompt and goes idle; the lead's script is
    // done, so after its telling nothing changes.
    let (dir, manifest, home) = led_project("lib-led-idle2", "create x\nspawn echoer e1 hello");
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    plan.timeout = LIMIT;
    plan.keep = true;
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    let Ended::Stuck(why) = &finished.ended else {
        panic!("{finished:#?}")
    };
    assert!(why.contains("teammates: e1"), "{why}");
    // The telling is in the lead's mail, from the host.
    let history =
        std::fs::read_to_string(home.join("teams/lib-led-idle2/history/team-lead.jsonl")).unwrap();
    assert!(
        history.contains("Nothing is left to wake you") && history.contains("\"teamhost\""),
        "{history}"
    );
    drop(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lead_that_leaves_its_teammates_plan_unanswered_is_told_which_then_the_run_ends_stuck() {
    // h1, in plan mode, asks the lead (the default route) to approve its
    // plan and waits; the lead's script waits for a message instead and
    // never answers.
    let dir = tempfile::tempdir().unwrap();
    let manifest = dir.path().join("team.toml");
    let script = "create x\nspawn planner h1 mode=plan plan # my plan\nwait-message h1 never-said";
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"lib-led-owed\"\n[lead]\ncomponent = {:?}\ngoal = {script:?}\n[[catalogue]]\nname = \"planner\"\ncomponent = {:?}\nauto_claim = false\n",
            teamhost_tests::LEADSCRIPT,
            teamhost_tests::HOSTILE
        ),
    )
    .unwrap();
    let home = dir.path().join("home");
    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&manifest).unwrap();
    plan.timeout = LIMIT;
    plan.shutdown_timeout = Duration::from_secs(10);
    plan.keep = true;
    let finished = run_through(&host, plan, &narrator, std::future::pending()).await;
    let Ended::Stuck(why) = &finished.ended else {
        panic!("{finished:#?}")
    };
    assert!(
        why.contains("requests waiting for its answer") && why.contains("from h1: a plan"),
        "{why}"
    );
    let history =
        std::fs::read_to_string(home.join("teams/lib-led-owed/history/team-lead.jsonl")).unwrap();
    assert!(
        history.contains("These requests wait for your answer")
            && history.contains("from h1: a plan"),
        "{history}"
    );
    assert!(
        finished.teammates.iter().all(|t| t.state.is_finished()),
        "the lead and h1 were stopped: {:?}",
        finished.teammates
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_led_plan_without_a_catalogue_is_refused_before_anything_starts() {
    let (dir, _, home) = led_project("lib-led-bare", "create x\ndelete");
    let manifest = dir.path().join("bare.toml");
    std::fs::write(
        &manifest,
        format!(
            "[team]\nname = \"lib-led-bare\"\n[lead]\ncomponent = {:?}\ngoal = \"create x\"\n",
            teamhost_tests::LEADSCRIPT
        ),
    )
    .unwrap();
    let host = host(&home);
    let refused = match RunPlan::load(&manifest) {
        Err(e) => format!("{e:#}"),
        Ok(plan) => match Run::prepare(&host, plan, &Recorder::default()).await {
            Ok(_) => panic!("a lead without a catalogue was accepted"),
            Err(e) => format!("{e:#}"),
        },
    };
    assert!(refused.contains("[[catalogue]]"), "{refused}");
    assert!(!home.join("teams/lib-led-bare").exists());
    assert!(!home.join("logs/lib-led-bare").exists(), "no lead started");
}

/// Wakes a waiter on every change the store's feed reports.
struct Heard(Arc<Notify>);

impl teamhost::store::StoreObserver for Heard {
    fn changed(&self, _: &teamhost::store::StoreEvent) {
        self.0.notify_one();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_joined_run_works_in_the_leads_team_and_ends_when_the_lead_shuts_it_down() {
    use teamhost::protocol::{ShutdownRequest, WireMessage};
    use teamhost::store::{NewTask, OutgoingMessage, TaskStatus};

    let (dir, manifest, home) = project("lib-join");
    // The joining manifest: the same teammates, no tasks (the lead's).
    let text = std::fs::read_to_string(&manifest).unwrap();
    let text = &text[..text.find("[[task]]").unwrap()];
    let joining = dir.path().join("join.toml");
    std::fs::write(&joining, text).unwrap();
    // The lead: another host on the same home, which made the team and its
    // task.
    let lead_host = host(&home);
    lead_host
        .create_team("lib-join", Default::default())
        .unwrap();
    let team = lead_host.team("lib-join").unwrap();
    team.create_task(NewTask {
        subject: "Count a".into(),
        description: "- a.txt".into(),
        ..Default::default()
    })
    .unwrap();
    let heard = Arc::new(Notify::new());
    let _feed = team.watch(Arc::new(Heard(heard.clone()))).unwrap();

    let host = host(&home);
    let narrator = Recorder::default();
    let mut plan = RunPlan::load(&joining).unwrap();
    plan.start = Start::Join;
    let joined = tokio::spawn({
        let host = host.clone();
        async move {
            let narrator = Recorder::default();
            let mut run = Run::start(&host, plan, &narrator).await.unwrap();
            let ended = run
                .until_done(&narrator, std::future::pending())
                .await
                .unwrap();
            let shutdown = run.shut_down(&narrator, &ended).await.unwrap();
            (run.finish(ended, shutdown).await.unwrap(), narrator.lines())
        }
    });
    // The lead waits for its task, then asks both teammates to stop.
    tokio::time::timeout(LIMIT, async {
        loop {
            let notified = heard.notified();
            let tasks = team.list_tasks().unwrap();
            if tasks.iter().all(|t| t.status == TaskStatus::Completed) {
                break;
            }
            notified.await;
        }
    })
    .await
    .expect("the joined teammates complete the lead's task");
    for name in ["ann", "bob"] {
        let request = ShutdownRequest::new(name, "team-lead", Some("done".into()));
        team.send(name, OutgoingMessage::new("team-lead", request.to_text()))
            .unwrap();
    }
    let (finished, lines) = tokio::time::timeout(LIMIT, joined)
        .await
        .expect("the joined run ends once its teammates approved")
        .unwrap();
    drop(narrator);
    assert_eq!(finished.ended, Ended::ShutDown, "{finished:#?}");
    assert_eq!(finished.error(), None, "{finished:#?}");
    assert!(finished.kept, "the team is the lead's");
    assert!(home.join("teams/lib-join/config.json").exists());
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("run: joined team lib-join in")),
        "{lines:#?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_beside_the_lead_refuses_tasks_and_an_adoption_without_leases() {
    let (_dir, manifest, home) = project("lib-beside");
    let host = host(&home);
    let mut plan = RunPlan::load(&manifest).unwrap();
    plan.start = Start::Join;
    let tasks = match Run::prepare(&host, plan.clone(), &Recorder::default()).await {
        Ok(_) => panic!("a join seeded tasks"),
        Err(e) => format!("{e:#}"),
    };
    assert!(
        tasks.contains("4 [[task]] entries, but --join seeds no tasks"),
        "{tasks}"
    );
    plan.manifest.tasks.clear();
    plan.start = Start::Adopt;
    let adopt = match Run::prepare(&host, plan, &Recorder::default()).await {
        Ok(_) => panic!("a standby on the file store"),
        Err(e) => format!("{e:#}"),
    };
    assert!(adopt.contains("keeps none"), "{adopt}");
    assert!(!home.join("teams/lib-beside").exists());
}
