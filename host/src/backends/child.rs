//! What the process and tmux backends share: the [`Backend`] itself
//! ([`ChildBackend`]: they differ only in how they start the child), and
//! before a teammate runs ([`begin`]) its registration in the team, the
//! rollback of a failed start, its log path, the executable, and the
//! `teamhost teammate` command line (the reference's flags, then teamhost's
//! own).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::assembly::{isolate, prepare};
use super::{Backend, BackendKind, SpawnEnv, SpawnFuture};
use crate::error::{Error, Result};
use crate::store::{Member, OutgoingMessage, Team};
use crate::teammate::{NotificationLevel, SpawnRequest};

/// Checks the request, compiles its component, registers the member with
/// `kind`'s `backendType` and writes the spawn prompt to its inbox, as the
/// reference's lead does before starting an external teammate.
pub(crate) async fn register(
    env: &SpawnEnv<'_>,
    team: &Team,
    req: &SpawnRequest,
    kind: BackendKind,
) -> Result<(Member, Option<LeadKey>)> {
    let mut prepared = prepare(env.runtime, req).await?;
    let config = team.config()?;
    let member = team.add_member(req.settings.new_member(
        &req.name,
        req.color.as_deref(),
        &req.prompt,
        &prepared.dir.display().to_string(),
        kind.as_str(),
    ))?;
    let name = member.name.clone();
    let member = isolate(&env.home, team, req, member, &mut prepared)
        .map_err(|e| undo_registration(team, &name, e))?;
    // The key is the registered name's (`add_member` may have made the
    // asked one unique), made before the prompt so that it is signed.
    let key = lead_key(env, team, &member.name).map_err(|e| undo_registration(team, &name, e))?;
    team.deliver(
        &member.name,
        OutgoingMessage::new(config.lead_name(), req.prompt.clone()),
    )
    .map_err(|e| {
        forget_lead_key(team, &member.name, key.as_ref());
        undo_registration(team, &member.name, e)
    })?;
    env.before_start(&member);
    Ok((member, key))
}

/// The member a child teammate runs as: `req` registered now
/// ([`register`]), or `rejoining`, registered in an earlier life (a
/// resume), with its component compiled for the child's cache; and its
/// lead key, when the host signs ([`lead_key`]; a rejoining member keeps
/// the one its earlier life had, when the home still holds it).
pub(crate) async fn registered(
    env: &SpawnEnv<'_>,
    team: &Team,
    req: &SpawnRequest,
    kind: BackendKind,
    rejoining: Option<Member>,
) -> Result<(Member, Option<LeadKey>)> {
    match rejoining {
        None => register(env, team, req, kind).await,
        Some(member) => {
            prepare(env.runtime, req).await?;
            let key = match kept_lead_key(env, team, &member.name) {
                Some(kept) => Some(kept),
                None => lead_key(env, team, &member.name)?,
            };
            Ok((member, key))
        }
    }
}

/// A keyed child's lead key: its public half, which the child is started
/// with and which its monitor forgets when the child ends (only that key:
/// a later start of the same name has its own).
#[derive(Debug, Clone)]
pub(crate) struct LeadKey(pub crate::protocol::lead_sig::LeadVerifyKey);

impl LeadKey {
    /// `--lead-verify-key <ms>.<key>`.
    pub(crate) fn args(&self) -> Vec<OsString> {
        vec!["--lead-verify-key".into(), self.0.flag_value().into()]
    }
}

/// With [`BackendOptions::sign_lead_entries`](super::BackendOptions::sign_lead_entries):
/// a fresh lead key for teammate `name`, handed to the store's
/// [`LeadGuard`](crate::store::LeadGuard) (so what this host writes into
/// its inbox as the lead is signed from now on, the spawn prompt included;
/// the guard also keeps it in the home's keyring for the lead's commands).
/// `name` must be the registered member's. Call it before the prompt is
/// written.
fn lead_key(env: &SpawnEnv<'_>, team: &Team, name: &str) -> Result<Option<LeadKey>> {
    if !env.backends.sign_lead_entries {
        return Ok(None);
    }
    let Some(guard) = team.store().lead_guard() else {
        return Err(Error::Backend(
            "sign_lead_entries is set but this host's store has no lead guard to keep the keys in"
                .into(),
        ));
    };
    let now = crate::protocol::time::now_ms() as i64;
    let key = crate::protocol::lead_sig::LeadSigningKey::generate(now)
        .map_err(|e| Error::Backend(format!("cannot make a lead key for {name}: {e}")))?;
    let public = key.verify_key().clone();
    guard
        .sign_for(team.name(), name, std::sync::Arc::new(key))
        .map_err(|e| Error::Backend(format!("cannot keep the lead key for {name}: {e}")))?;
    Ok(Some(LeadKey(public)))
}

/// With [`BackendOptions::sign_lead_entries`](super::BackendOptions::sign_lead_entries):
/// the key a rejoining member's earlier life was launched with, if this
/// host or the home's keyring still holds it. The member comes back with
/// it (`--resumed`), so the lead entries its earlier life left unread still
/// verify.
fn kept_lead_key(env: &SpawnEnv<'_>, team: &Team, name: &str) -> Option<LeadKey> {
    if !env.backends.sign_lead_entries {
        return None;
    }
    let guard = team.store().lead_guard()?;
    guard.current_key(team.name(), name).map(LeadKey)
}

/// How a child backend starts `req` (registering it), or starts the
/// registered `rejoining` member again with `--resumed`.
pub(crate) type StartChild =
    for<'a> fn(SpawnEnv<'a>, &'a Team, SpawnRequest, Option<Member>) -> SpawnFuture<'a>;

/// A [`Backend`] whose teammates run `teamhost teammate` as a child
/// process: the process and tmux backends, which differ only in how they
/// start it.
pub(crate) struct ChildBackend {
    kind: BackendKind,
    start: StartChild,
}

impl ChildBackend {
    /// The backend of `kind` that starts its children with `start`.
    pub(crate) fn new(kind: BackendKind, start: StartChild) -> ChildBackend {
        ChildBackend { kind, start }
    }
}

impl Backend for ChildBackend {
    fn kind(&self) -> BackendKind {
        self.kind
    }

    fn spawn<'a>(
        &'a self,
        env: SpawnEnv<'a>,
        team: &'a Team,
        req: SpawnRequest,
    ) -> SpawnFuture<'a> {
        (self.start)(env, team, req, None)
    }

    fn rejoin<'a>(
        &'a self,
        env: SpawnEnv<'a>,
        team: &'a Team,
        member: Member,
        req: SpawnRequest,
    ) -> Option<SpawnFuture<'a>> {
        Some((self.start)(env, team, req, Some(member)))
    }
}

/// A child teammate registered and about to start: what the process and
/// tmux backends do alike before they start `teamhost teammate`
/// ([`begin`]).
pub(crate) struct Starting {
    /// How the child reaches its team.
    pub store: ChildStore,
    /// The member, registered (or rejoining).
    pub member: Member,
    /// The lead key the child verifies the lead's messages with.
    pub key: Option<LeadKey>,
    /// A new member (else a rejoining one, started with `--resumed`).
    pub fresh: bool,
    /// The `teamhost` executable, checked.
    pub exe: PathBuf,
}

impl Starting {
    /// After a failed start: forgets the lead key and removes a member
    /// registered for it (a rejoining one is left as it is); returns `e`.
    pub(crate) fn rollback(&self, team: &Team, e: Error) -> Error {
        forget_lead_key(team, &self.member.name, self.key.as_ref());
        undo_if_fresh(team, &self.member.name, self.fresh, e)
    }

    /// The lead key's flags and `--resumed` for a rejoining member.
    pub(crate) fn flags(&self) -> Vec<OsString> {
        let mut flags = self.key.as_ref().map(LeadKey::args).unwrap_or_default();
        if !self.fresh {
            flags.push("--resumed".into());
        }
        flags
    }
}

/// Before anything is written, checks how a child would reach `team`
/// ([`child_store`]; `refuse` may refuse that store for this backend);
/// then registers `req` as `kind` (or takes the `rejoining` member) and
/// checks the executable, rolling the registration back if it is missing.
pub(crate) async fn begin(
    env: &SpawnEnv<'_>,
    team: &Team,
    req: &SpawnRequest,
    kind: BackendKind,
    rejoining: Option<Member>,
    refuse: impl FnOnce(&ChildStore) -> Result<()>,
) -> Result<Starting> {
    // A child reaches its team through the files or a NATS server, never
    // through this process's memory.
    let store = child_store(team, env.home.root())?;
    refuse(&store)?;
    let fresh = rejoining.is_none();
    let (member, key) = registered(env, team, req, kind, rejoining).await?;
    let mut starting = Starting {
        store,
        member,
        key,
        fresh,
        exe: PathBuf::new(),
    };
    match super::exe::checked_exe(env.backends).await {
        Ok(exe) => starting.exe = exe,
        Err(e) => return Err(starting.rollback(team, e)),
    }
    Ok(starting)
}

/// Forgets `key` for `name` when the child it was made for did not start
/// or has ended (a newer key for the name is kept).
pub(crate) fn forget_lead_key(team: &Team, name: &str, key: Option<&LeadKey>) {
    if let (Some(guard), Some(key)) = (team.store().lead_guard(), key) {
        guard.forget_key(team.name(), name, &key.0);
    }
}

/// After a failed start: removes a member registered for it (`fresh`), or
/// leaves a rejoining one as it is; returns `e`.
pub(crate) fn undo_if_fresh(team: &Team, name: &str, fresh: bool, e: Error) -> Error {
    if fresh {
        undo_registration(team, name, e)
    } else {
        e
    }
}

/// Removes a member whose start failed (and its unread prompt), returning `e`.
pub(crate) fn undo_registration(team: &Team, name: &str, e: Error) -> Error {
    if let Err(e2) = team.remove_member(name) {
        tracing::error!(teammate = %name, error = %e2, "could not undo a failed spawn");
    }
    if let Err(e2) = team.take_unread(name) {
        tracing::error!(teammate = %name, error = %e2, "could not clear the inbox of a failed spawn");
    }
    e
}

/// `{log_dir}/{team}/{name}.log`.
pub(crate) fn log_path(log_dir: &Path, team: &Team, name: &str) -> PathBuf {
    log_dir.join(team.name()).join(format!("{name}.log"))
}

/// `teamhost teammate` and its arguments: who it is (the reference's
/// `--agent-id`, `--agent-name`, `--team-name`, `--agent-color`,
/// `--parent-session-id`), teamhost's `--component`, `--home` and (for a
/// store on a server) `--store`, how it runs
/// ([`TeammateSettings::child_args`](crate::teammate::TeammateSettings::child_args):
/// `--notifications` always given, so the host's level wins over what the
/// child might find on its own), `--settings` (the host's hooks, for the
/// same reason) and its model access.
pub(crate) fn teammate_args(
    team: &Team,
    store: &ChildStore,
    member: &Member,
    req: &SpawnRequest,
    hooks: &crate::hooks::Hooks,
    models: &crate::teammate::ModelAccess,
) -> Vec<OsString> {
    let mut a: Vec<OsString> = vec!["teammate".into()];
    let mut flag = |k: &str, v: &str| {
        a.push(k.into());
        a.push(v.into());
    };
    flag("--agent-id", &member.agent_id);
    flag("--agent-name", &member.name);
    flag("--team-name", team.name());
    flag("--agent-color", member.color.as_deref().unwrap_or("blue"));
    if let Ok(Some(session)) = team.config().map(|c| c.lead_session_id) {
        flag("--parent-session-id", &session);
    }
    if let Some(url) = store.url.as_ref().filter(|u| !u.has_credentials()) {
        flag("--store", &url.to_arg());
    }
    a.push("--component".into());
    a.push(absolute(&req.component).into_os_string());
    a.push("--home".into());
    a.push(absolute(&store.home).into_os_string());
    a.extend(
        req.settings
            .child_args(NotificationLevel::default())
            .into_iter()
            .map(OsString::from),
    );
    a.push("--settings".into());
    a.push(hooks.to_settings().to_string().into());
    a.extend(models.child_args().iter().map(OsString::from));
    a
}

/// How a child teammate reaches its team: the home it is given (`--home`)
/// and, for a store on a NATS server, that server's URL.
#[derive(Debug, Clone)]
pub(crate) struct ChildStore {
    /// The file store's home, or the host's machine-local home when the
    /// team lives on a server (the child's cache and logs go there).
    pub home: PathBuf,
    /// The NATS store's URL. Without credentials it is passed as `--store`;
    /// with them, only in the child's environment (`$TEAMHOST_STORE`), so
    /// they never show in `ps`.
    pub url: Option<crate::store::NatsUrl>,
    /// The NATS store's TLS files and credentials (paths), passed only in
    /// the child's environment (`$TEAMHOST_STORE_CA`, …), never on its
    /// command line.
    pub security: crate::store::NatsSecurity,
}

impl ChildStore {
    /// The URL for the child's environment when it carries credentials
    /// (a tmux pane cannot be given it without showing it).
    pub fn secret_url(&self) -> Option<(&'static str, String)> {
        let url = self.url.as_ref().filter(|u| u.has_credentials())?;
        Some(("TEAMHOST_STORE", url.to_arg()))
    }

    /// The environment a child needs besides its arguments: the URL when
    /// it carries credentials, and every TLS file and credentials file the
    /// host's store connected with (absolute paths, not their contents).
    pub fn env(&self) -> Vec<(&'static str, OsString)> {
        let mut env: Vec<(&'static str, OsString)> = self
            .secret_url()
            .into_iter()
            .map(|(k, v)| (k, v.into()))
            .collect();
        env.extend(
            self.security
                .child_env()
                .into_iter()
                .map(|(k, v)| (k, v.into_os_string())),
        );
        env
    }
}

/// How a child teammate of `team` reaches it (see [`ChildStore`]): the file
/// store's home, or the NATS store's URL with the host's `home`. Any other
/// store (the memory store) lives in this process only and is refused.
pub(crate) fn child_store(team: &Team, home: &Path) -> Result<ChildStore> {
    if let Some(files) = team.store().file_store() {
        return Ok(ChildStore {
            home: files.root().to_path_buf(),
            url: None,
            security: Default::default(),
        });
    }
    if let Some(nats) = team.store().nats_store() {
        return Ok(ChildStore {
            home: home.to_path_buf(),
            url: Some(nats.url().clone()),
            security: nats.security().clone(),
        });
    }
    Err(Error::Backend(format!(
        "team {} lives in this process only (its store is {:?}); teammates in their own process or tmux pane reach a team through its files or a NATS server: use the in-process backend, or a host over a file or NATS store",
        team.name(),
        team.store().backend()
    )))
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::NotificationLevel;
    use crate::store::test_team;

    #[test]
    fn teammate_args_always_pass_the_notification_level_on() {
        let (tmp, team) = test_team(&["w"]);
        let member = team.config().unwrap().member("w").unwrap().clone();
        let level_of = |notifications| {
            let mut req = SpawnRequest::new("w", "w.wasm", "p", tmp.path());
            req.settings.notifications = notifications;
            let args = teammate_args(
                &team,
                &ChildStore {
                    home: tmp.path().to_path_buf(),
                    url: None,
                    security: Default::default(),
                },
                &member,
                &req,
                &Default::default(),
                &Default::default(),
            );
            let at = args
                .iter()
                .position(|a| a == "--notifications")
                .expect("--notifications is passed");
            args[at + 1].clone()
        };
        assert_eq!(
            level_of(Some(NotificationLevel::StateChanges)),
            "state-changes"
        );
        assert_eq!(level_of(Some(NotificationLevel::None)), "none");
        assert_eq!(level_of(None), "all");
    }

    #[test]
    fn store_settings_reach_a_child_in_its_environment_never_its_arguments() {
        let (tmp, team) = test_team(&["w"]);
        let member = team.config().unwrap().member("w").unwrap().clone();
        let req = SpawnRequest::new("w", "w.wasm", "p", tmp.path());
        let store = ChildStore {
            home: tmp.path().to_path_buf(),
            // A password no temporary directory's name can hold (`pw`
            // matched `/tmp/.tmpwy…` once in a while).
            url: Some(crate::store::NatsUrl::parse("tls://u:s3cret-pass@h:4222/p").unwrap()),
            security: crate::store::NatsSecurity {
                ca: Some("/etc/team/ca.pem".into()),
                creds: Some("/etc/team/team.creds".into()),
                ..Default::default()
            },
        };
        let args = teammate_args(
            &team,
            &store,
            &member,
            &req,
            &Default::default(),
            &Default::default(),
        );
        for a in &args {
            let a = a.to_string_lossy();
            assert!(
                !a.contains("/etc/team") && !a.contains("s3cret") && !a.starts_with("--store"),
                "{a} is on the command line"
            );
        }
        let env = store.env();
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        assert_eq!(get("TEAMHOST_STORE_CA"), Some("/etc/team/ca.pem".into()));
        assert_eq!(
            get("TEAMHOST_STORE_CREDS"),
            Some("/etc/team/team.creds".into())
        );
        assert_eq!(
            get("TEAMHOST_STORE"),
            Some("tls://u:s3cret-pass@h:4222/p".into())
        );
        assert_eq!(get("TEAMHOST_STORE_NKEY"), None);
    }
}
