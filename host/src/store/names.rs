//! Which names may become team and agent keys, and how they are spelled:
//! the reference's sanitising, refusals of anything path-like, agent ids and
//! task ids. Pure functions every store backend applies the same way. What
//! a new member may be called, on top of that, is `names/new_name.rs`'s
//! ([`check_new_member_name`], [`check_distinct`]).

use crate::error::{Error, Result};

mod new_name;
pub use new_name::{check_distinct, check_new_member_name, RESERVED};
pub(crate) use new_name::{looks_like_member, LookalikeKey};

/// Longest team or agent name accepted, in bytes. Leaves room under the usual
/// 255-byte file-name limit for suffixes such as `.json.lock` and `.corrupt-<ts>`.
pub const MAX_NAME_LEN: usize = 128;

/// Sanitises a team name as the reference does (non-alphanumerics → `-`, lower
/// case) after refusing names that are empty, too long or path-like.
pub fn sanitize_team_name(name: &str) -> Result<String> {
    check_name("team", name)?;
    Ok(name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect())
}

/// Validates an agent name and returns the file stem used for its inbox
/// (`@` → `-`, so `alice@team` and `alice-team` share a file as in the reference).
pub fn agent_file_stem(name: &str) -> Result<String> {
    check_name("agent", name)?;
    if name.starts_with('.') {
        return Err(invalid("agent", name, "must not start with '.'"));
    }
    Ok(name.replace('@', "-"))
}

/// Builds the agent id `name@team`.
pub fn agent_id(name: &str, team: &str) -> String {
    format!("{name}@{team}")
}

/// Checks that `id` is a task id: a positive decimal without sign or leading zeros.
pub fn parse_task_id(id: &str) -> Result<u64> {
    let bad = || Error::StoreRule(format!("task id {id:?} is not a positive decimal number"));
    if id.is_empty() || id.len() > 19 || !id.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    if id.starts_with('0') {
        return Err(bad());
    }
    id.parse::<u64>().map_err(|_| bad())
}

fn check_name(kind: &'static str, name: &str) -> Result<()> {
    if name.trim().is_empty() {
        return Err(invalid(kind, name, "must not be empty"));
    }
    if name.len() > MAX_NAME_LEN {
        return Err(invalid(
            kind,
            name,
            &format!("is {} bytes, the limit is {MAX_NAME_LEN}", name.len()),
        ));
    }
    if name.contains('\0') {
        return Err(invalid(kind, name, "contains a NUL byte"));
    }
    if name.chars().any(char::is_control) {
        return Err(invalid(kind, name, "contains a control character"));
    }
    if name.contains('/') || name.contains('\\') {
        return Err(invalid(kind, name, "contains a path separator"));
    }
    if name.contains("..") {
        return Err(invalid(kind, name, "contains '..'"));
    }
    Ok(())
}

fn invalid(kind: &'static str, name: &str, reason: &str) -> Error {
    Error::InvalidName {
        kind,
        name: name.to_string(),
        reason: reason.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn team_names_are_sanitised_like_the_reference() {
        assert_eq!(sanitize_team_name("My Team_1").unwrap(), "my-team-1");
        assert_eq!(
            sanitize_team_name("session-76c4e2e6").unwrap(),
            "session-76c4e2e6"
        );
        assert_eq!(sanitize_team_name("Ünïcode!").unwrap(), "-n-code-");
    }

    #[test]
    fn names_that_would_leave_the_home_are_refused_with_the_reason() {
        for (name, why) in [
            ("", "empty"),
            ("   ", "empty"),
            ("..", "'..'"),
            ("../etc", "separator"),
            ("a/b", "separator"),
            ("a\\b", "separator"),
            ("a\0b", "NUL"),
            ("a\nb", "control"),
        ] {
            let err = sanitize_team_name(name).unwrap_err().to_string();
            assert!(err.contains(why), "{name:?}: {err}");
            assert!(err.contains("team name"), "{err}");
            let err = agent_file_stem(name).unwrap_err().to_string();
            assert!(err.contains(why) && err.contains("agent name"), "{err}");
        }
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert!(sanitize_team_name(&long)
            .unwrap_err()
            .to_string()
            .contains("limit"));
        assert!(agent_file_stem(".hidden").is_err());
    }

    #[test]
    fn task_ids_must_be_plain_positive_decimals() {
        assert_eq!(parse_task_id("42").unwrap(), 42);
        for bad in [
            "",
            "0",
            "01",
            "-1",
            "1.0",
            "../1",
            "a",
            "99999999999999999999",
        ] {
            assert!(parse_task_id(bad).is_err(), "{bad:?}");
        }
    }
}
