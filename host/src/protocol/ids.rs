//! Request ids in the reference's formats, and parsers that check an id's shape.
//!
//! | kind | format | example |
//! |---|---|---|
//! | shutdown | `shutdown-{epoch_ms}@{target}` | `shutdown-1770977603516@verifier-01` |
//! | plan approval | `plan_approval-{epoch_ms}@{agent}@{team}` | `plan_approval-1770979387887@planner-01@advanced-verify` |
//! | permission | `perm-{epoch_ms}-{7 chars of [a-z0-9]}` | `perm-1770980462304-4uqstf5` |
//!
//! The shutdown id names the teammate asked to shut down (the *target*), not the
//! sender. Names are inserted as given: sanitising team and agent names is the
//! store's job. A plan-approval id is split at its first and last `@`, so an agent
//! name may contain `@` but a team name may not (sanitised team names never do).

use std::fmt;

/// Which of the three request-id formats an id was checked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestIdKind {
    /// `shutdown-{epoch_ms}@{target}`.
    Shutdown,
    /// `plan_approval-{epoch_ms}@{agent}@{team}`.
    PlanApproval,
    /// `perm-{epoch_ms}-{suffix}`.
    Permission,
}

impl RequestIdKind {
    /// The format template, as shown in error messages.
    pub const fn format(self) -> &'static str {
        match self {
            RequestIdKind::Shutdown => "shutdown-{epoch_ms}@{name}",
            RequestIdKind::PlanApproval => "plan_approval-{epoch_ms}@{agent}@{team}",
            RequestIdKind::Permission => "perm-{epoch_ms}-{7 chars of a-z0-9}",
        }
    }

    const fn prefix(self) -> &'static str {
        match self {
            RequestIdKind::Shutdown => "shutdown-",
            RequestIdKind::PlanApproval => "plan_approval-",
            RequestIdKind::Permission => "perm-",
        }
    }
}

impl fmt::Display for RequestIdKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            RequestIdKind::Shutdown => "shutdown",
            RequestIdKind::PlanApproval => "plan approval",
            RequestIdKind::Permission => "permission",
        })
    }
}

/// An id that does not have the shape of its kind.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id:?} is not a {kind} request id (`{}`): {problem}", kind.format())]
pub struct IdError {
    /// The format the id was checked against.
    pub kind: RequestIdKind,
    /// The id as given.
    pub id: String,
    /// What is wrong with it.
    pub problem: &'static str,
}

/// Length of the random suffix of a permission request id as teamhost writes it.
pub const PERMISSION_SUFFIX_LEN: usize = 7;

/// `shutdown-{now_ms}@{target_name}`: the id of a request asking `target_name`
/// to shut down.
pub fn shutdown_request_id(target_name: &str, now_ms: u64) -> String {
    format!("shutdown-{now_ms}@{target_name}")
}

/// `plan_approval-{now_ms}@{agent}@{team}`: the id of `agent`'s request to have
/// its plan approved.
pub fn plan_approval_request_id(agent: &str, team: &str, now_ms: u64) -> String {
    format!("plan_approval-{now_ms}@{agent}@{team}")
}

/// `perm-{now_ms}-{suffix}` with a fresh random suffix of
/// [`PERMISSION_SUFFIX_LEN`] characters from `[a-z0-9]`.
pub fn permission_request_id(now_ms: u64) -> String {
    const ALPHABET: &[u8; 36] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let suffix: String = (0..PERMISSION_SUFFIX_LEN)
        .map(|_| char::from(ALPHABET[fastrand::usize(..ALPHABET.len())]))
        .collect();
    format!("perm-{now_ms}-{suffix}")
}

/// The parts of a shutdown request id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShutdownRequestId<'a> {
    /// When the request was made, in epoch milliseconds.
    pub ms: u64,
    /// The teammate asked to shut down (everything after the first `@`).
    pub target: &'a str,
}

/// The parts of a plan-approval request id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PlanApprovalRequestId<'a> {
    /// When the request was made, in epoch milliseconds.
    pub ms: u64,
    /// The agent whose plan it is (between the first and the last `@`).
    pub agent: &'a str,
    /// Its team (after the last `@`).
    pub team: &'a str,
}

/// The parts of a permission request id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PermissionRequestId<'a> {
    /// When the request was made, in epoch milliseconds.
    pub ms: u64,
    /// The random suffix.
    pub suffix: &'a str,
}

/// Checks that `id` is `shutdown-{digits}@{non-empty name}`.
pub fn parse_shutdown_request_id(id: &str) -> Result<ShutdownRequestId<'_>, IdError> {
    let kind = RequestIdKind::Shutdown;
    let rest = strip_prefix(kind, id)?;
    let (ms, target) = rest
        .split_once('@')
        .ok_or_else(|| error(kind, id, "no `@` before the target name"))?;
    let ms = parse_ms(kind, id, ms)?;
    if target.is_empty() {
        return Err(error(kind, id, "the target name after `@` is empty"));
    }
    Ok(ShutdownRequestId { ms, target })
}

/// Checks that `id` is `plan_approval-{digits}@{non-empty agent}@{non-empty team}`.
pub fn parse_plan_approval_request_id(id: &str) -> Result<PlanApprovalRequestId<'_>, IdError> {
    let kind = RequestIdKind::PlanApproval;
    let rest = strip_prefix(kind, id)?;
    let (ms, names) = rest
        .split_once('@')
        .ok_or_else(|| error(kind, id, "no `@` before the agent name"))?;
    let ms = parse_ms(kind, id, ms)?;
    let (agent, team) = names
        .rsplit_once('@')
        .ok_or_else(|| error(kind, id, "no `@` between the agent and team names"))?;
    if agent.is_empty() {
        return Err(error(kind, id, "the agent name is empty"));
    }
    if team.is_empty() {
        return Err(error(kind, id, "the team name is empty"));
    }
    Ok(PlanApprovalRequestId { ms, agent, team })
}

/// Checks that `id` is `perm-{digits}-{suffix}` where the suffix is 1 to 7
/// characters of `[a-z0-9]`.
///
/// teamhost always writes 7 characters. Shorter suffixes are accepted because
/// the reference takes `Math.random().toString(36).substring(2, 9)`, which is
/// shorter on the rare draws whose base-36 form has few digits.
pub fn parse_permission_request_id(id: &str) -> Result<PermissionRequestId<'_>, IdError> {
    let kind = RequestIdKind::Permission;
    let rest = strip_prefix(kind, id)?;
    let (ms, suffix) = rest
        .split_once('-')
        .ok_or_else(|| error(kind, id, "no `-` before the random suffix"))?;
    let ms = parse_ms(kind, id, ms)?;
    if suffix.is_empty() || suffix.len() > PERMISSION_SUFFIX_LEN {
        return Err(error(
            kind,
            id,
            "the random suffix must be 1 to 7 characters",
        ));
    }
    if !suffix
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    {
        return Err(error(
            kind,
            id,
            "the random suffix may only use a-z and 0-9",
        ));
    }
    Ok(PermissionRequestId { ms, suffix })
}

fn strip_prefix(kind: RequestIdKind, id: &str) -> Result<&str, IdError> {
    id.strip_prefix(kind.prefix())
        .ok_or_else(|| error(kind, id, "wrong prefix"))
}

fn parse_ms(kind: RequestIdKind, id: &str, digits: &str) -> Result<u64, IdError> {
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(error(
            kind,
            id,
            "the epoch milliseconds are not a decimal number",
        ));
    }
    digits
        .parse()
        .map_err(|_| error(kind, id, "the epoch milliseconds are too large"))
}

fn error(kind: RequestIdKind, id: &str, problem: &'static str) -> IdError {
    IdError {
        kind,
        id: id.to_string(),
        problem,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shutdown_ids_name_the_target_and_parse_back() {
        let id = shutdown_request_id("verifier-01", 1_770_977_603_516);
        assert_eq!(id, "shutdown-1770977603516@verifier-01");
        assert_eq!(
            parse_shutdown_request_id(&id),
            Ok(ShutdownRequestId {
                ms: 1_770_977_603_516,
                target: "verifier-01"
            })
        );
    }

    #[test]
    fn plan_approval_ids_name_agent_and_team_and_parse_back() {
        let id = plan_approval_request_id("planner-01", "advanced-verify", 1_770_979_387_887);
        assert_eq!(id, "plan_approval-1770979387887@planner-01@advanced-verify");
        assert_eq!(
            parse_plan_approval_request_id(&id),
            Ok(PlanApprovalRequestId {
                ms: 1_770_979_387_887,
                agent: "planner-01",
                team: "advanced-verify"
            })
        );
    }

    #[test]
    fn permission_ids_have_seven_lowercase_alphanumerics_and_parse_back() {
        for _ in 0..200 {
            let id = permission_request_id(1_770_980_462_304);
            let parsed = parse_permission_request_id(&id).expect("own id parses");
            assert_eq!(parsed.ms, 1_770_980_462_304);
            assert_eq!(parsed.suffix.len(), PERMISSION_SUFFIX_LEN, "{id}");
            assert!(id.starts_with("perm-1770980462304-"), "{id}");
        }
        assert_ne!(permission_request_id(1), permission_request_id(1));
    }

    #[test]
    fn reference_example_ids_parse() {
        assert!(parse_shutdown_request_id("shutdown-1770977604066@verifier-02").is_ok());
        assert!(parse_plan_approval_request_id(
            "plan_approval-1770985126334@planner-reject@plan-reject-verify"
        )
        .is_ok());
        assert!(parse_permission_request_id("perm-1770980462304-4uqstf5").is_ok());
        assert!(parse_permission_request_id("perm-1770980484351-5rzn82g").is_ok());
        assert!(
            parse_permission_request_id("perm-1770980484351-i").is_ok(),
            "short reference suffixes are accepted"
        );
    }

    #[test]
    fn malformed_shutdown_ids_are_refused_with_the_reason() {
        for (id, problem) in [
            ("", "wrong prefix"),
            ("plan_approval-1@a@b", "wrong prefix"),
            ("shutdown-1770977603516", "no `@` before the target name"),
            (
                "shutdown-@bob",
                "the epoch milliseconds are not a decimal number",
            ),
            (
                "shutdown-12a@bob",
                "the epoch milliseconds are not a decimal number",
            ),
            (
                "shutdown-99999999999999999999999@bob",
                "the epoch milliseconds are too large",
            ),
            ("shutdown-1@", "the target name after `@` is empty"),
        ] {
            let err = parse_shutdown_request_id(id).expect_err(id);
            assert_eq!(err.problem, problem, "{id}");
            assert_eq!(err.kind, RequestIdKind::Shutdown);
        }
    }

    #[test]
    fn malformed_plan_approval_ids_are_refused_with_the_reason() {
        for (id, problem) in [
            ("shutdown-1@a", "wrong prefix"),
            ("plan_approval-1", "no `@` before the agent name"),
            (
                "plan_approval-1@planner",
                "no `@` between the agent and team names",
            ),
            ("plan_approval-1@@team", "the agent name is empty"),
            ("plan_approval-1@planner@", "the team name is empty"),
            (
                "plan_approval-x@planner@team",
                "the epoch milliseconds are not a decimal number",
            ),
        ] {
            let err = parse_plan_approval_request_id(id).expect_err(id);
            assert_eq!(err.problem, problem, "{id}");
        }
    }

    #[test]
    fn malformed_permission_ids_are_refused_with_the_reason() {
        for (id, problem) in [
            ("permission-1-abcdefg", "wrong prefix"),
            ("perm-1770980462304", "no `-` before the random suffix"),
            (
                "perm-1770980462304-",
                "the random suffix must be 1 to 7 characters",
            ),
            (
                "perm-1770980462304-abcdefgh",
                "the random suffix must be 1 to 7 characters",
            ),
            (
                "perm-1770980462304-ABCDEFG",
                "the random suffix may only use a-z and 0-9",
            ),
            (
                "perm--abcdefg",
                "the epoch milliseconds are not a decimal number",
            ),
        ] {
            let err = parse_permission_request_id(id).expect_err(id);
            assert_eq!(err.problem, problem, "{id}");
        }
    }

    #[test]
    fn id_errors_show_the_id_and_the_expected_format() {
        let err = parse_shutdown_request_id("shutdown-1@").expect_err("empty target");
        assert_eq!(
            err.to_string(),
            "\"shutdown-1@\" is not a shutdown request id (`shutdown-{epoch_ms}@{name}`): \
             the target name after `@` is empty"
        );
    }
}
