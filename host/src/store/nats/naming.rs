//! Every name the NATS store makes: buckets, streams, subjects and keys of a
//! team, under the URL's prefix `P`, and the reversible encoding of agent
//! names into one subject token.
//!
//! | what | name |
//! |---|---|
//! | a team's KV bucket | `P_TEAM` (stream `KV_P_TEAM`, subjects `$KV.P_TEAM.>`) |
//! | its keys | `config`, `txn` (task passes), `task.ID`, `usage.AGENT`, `plan.AGENT.MS`, `aside.WHAT.STAMP` |
//! | its mail stream | `P_mail_TEAM`, subjects `P.TEAM.mail.in.AGENT` (deliveries) and `P.TEAM.mail.out.AGENT` (consumption records: the history) |
//! | its change notices | `P.TEAM.ev.kv.KEY…` and `P.TEAM.ev.mail.{in,out}.AGENT`, republished by the server after each store |
//!
//! Team names reach here sanitised (`a-z`, `0-9`, `-`), so they are valid in
//! every one of these places as they are. Agent file stems may still hold
//! `.`, `*`, `>`, spaces and any other printable character
//! ([`crate::store::names`] refuses only separators, controls, `..` and a
//! leading `.`), none of which a subject token may hold: [`token`] keeps
//! `A-Z a-z 0-9 _ -` and writes every other byte as `=XX`, so the mapping is
//! one-to-one and [`untoken`] gives the stem back.

/// Where one team's state lives.
#[derive(Debug, Clone)]
pub(super) struct TeamNames {
    /// The bucket (`P_TEAM`).
    pub bucket: String,
    /// The bucket's stream (`KV_P_TEAM`).
    pub kv_stream: String,
    /// The mail stream (`P_mail_TEAM`).
    pub mail_stream: String,
    /// `P.TEAM`, the start of the team's mail and notice subjects.
    pub base: String,
}

impl TeamNames {
    pub fn new(prefix: &str, team: &str) -> TeamNames {
        let bucket = format!("{prefix}_{team}");
        TeamNames {
            kv_stream: format!("KV_{bucket}"),
            mail_stream: format!("{prefix}_mail_{team}"),
            base: format!("{prefix}.{team}"),
            bucket,
        }
    }

    /// The subject of a KV key.
    pub fn key(&self, key: &str) -> String {
        format!("$KV.{}.{key}", self.bucket)
    }

    /// Every subject of the bucket.
    pub fn kv_subjects(&self) -> String {
        format!("$KV.{}.>", self.bucket)
    }

    /// Every subject of the mail stream.
    pub fn mail_subjects(&self) -> String {
        format!("{}.mail.>", self.base)
    }

    /// Deliveries to `stem`.
    pub fn inbox(&self, stem: &str) -> String {
        format!("{}.mail.in.{}", self.base, token(stem))
    }

    /// `stem`'s consumption records (its history).
    pub fn outbox(&self, stem: &str) -> String {
        format!("{}.mail.out.{}", self.base, token(stem))
    }

    /// Where the server republishes the bucket's stores.
    pub fn kv_notices(&self) -> String {
        format!("{}.ev.kv.>", self.base)
    }

    /// Where the server republishes the mail stream's stores.
    pub fn mail_notices(&self) -> String {
        format!("{}.ev.mail.>", self.base)
    }

    /// Every notice of the team (one subscription for a feed).
    pub fn notices(&self) -> String {
        format!("{}.ev.>", self.base)
    }
}

/// The key of task `id`.
pub(super) fn task_key(id: u64) -> String {
    format!("task.{id}")
}

/// `stem` as one subject token (see the module docs).
pub(super) fn token(stem: &str) -> String {
    let mut out = String::with_capacity(stem.len());
    for b in stem.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("={b:02X}"));
        }
    }
    out
}

/// The stem a [`token`] was made from; `None` for anything [`token`] does
/// not make.
pub(super) fn untoken(tok: &str) -> Option<String> {
    let bytes = tok.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'=' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_names_round_trip_through_one_subject_token() {
        for stem in [
            "alice",
            "a.b",
            "x*y>z",
            "with space",
            "héllo",
            "eq=sign",
            "team-lead",
        ] {
            let t = token(stem);
            assert!(
                t.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"_-=".contains(&b)),
                "{t}"
            );
            assert_eq!(untoken(&t).as_deref(), Some(stem));
        }
        assert_eq!(token("a.b"), "a=2Eb");
        assert_eq!(untoken("a=Z"), None);
    }

    #[test]
    fn a_team_names_its_bucket_streams_and_subjects_under_the_prefix() {
        let n = TeamNames::new("th", "my-team");
        assert_eq!(n.bucket, "th_my-team");
        assert_eq!(n.kv_stream, "KV_th_my-team");
        assert_eq!(n.mail_stream, "th_mail_my-team");
        assert_eq!(n.inbox("a.b"), "th.my-team.mail.in.a=2Eb");
        assert_eq!(n.key(&task_key(3)), "$KV.th_my-team.task.3");
    }
}
