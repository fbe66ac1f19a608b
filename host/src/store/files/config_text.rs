//! The text of a config file: the bytes `serde_json::to_vec_pretty` gives
//! (what every other file of the team is written as, and what the reference
//! writes), with each member's part taken from the last write that wrote
//! it while the member is unchanged, instead of being serialised again.
//!
//! A config holds every member, and every change to one of them (a
//! registration, an `isActive` flip) writes the whole file: at 10,000
//! members, serialising it was a seventh of the CPU of spawning them. A
//! member is an `Arc<Member>` that changes only through `Arc::make_mut`,
//! so the text kept for an allocation is that member's text as long as the
//! allocation holds it. The table keeps a [`Weak`] to each: while one
//! exists, `make_mut` cannot change the member in place (it moves it to a
//! new allocation, and the weak reference stops upgrading), and the
//! address cannot be reused by another member.
//!
//! The config is written without its members first, which leaves the mark
//! `"members": []` at the top level (a key at two spaces' indent: no string
//! holds a raw newline, so nothing else can look like it), and the
//! members' texts, indented four spaces further, go in its place. Anything
//! that makes the mark ambiguous (an `extra` field named `members`) is
//! written by serde_json whole. Debug builds compare every text with
//! serde_json's own.

use std::sync::{Arc, Mutex, Weak};

use crate::store::{Member, TeamConfig};

/// Where the members go, in the text of a config without them.
const MARK: &[u8] = b"\n  \"members\": []";

/// A member's text as the config's list holds it.
#[derive(Debug)]
struct Kept {
    member: Weak<Member>,
    text: Arc<[u8]>,
}

/// The members' texts, by the address of their `Arc`.
#[derive(Debug, Default)]
pub(super) struct ConfigText {
    kept: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    texts: hashbrown::HashMap<usize, Kept>,
    /// How many were left by the last sweep.
    swept_to: usize,
}

impl ConfigText {
    /// `config` as pretty JSON: the same bytes as
    /// `serde_json::to_vec_pretty(config)`.
    pub(super) fn of(&self, config: &TeamConfig) -> serde_json::Result<Vec<u8>> {
        let text = self.spliced(config)?;
        debug_assert_eq!(
            String::from_utf8_lossy(&text),
            String::from_utf8_lossy(&serde_json::to_vec_pretty(config)?),
            "a config's text differs from serde_json's"
        );
        Ok(text)
    }

    fn spliced(&self, config: &TeamConfig) -> serde_json::Result<Vec<u8>> {
        if config.members.is_empty() {
            return serde_json::to_vec_pretty(config);
        }
        let shell = TeamConfig {
            members: Arc::default(),
            ..config.clone()
        };
        let outer = serde_json::to_vec_pretty(&shell)?;
        let Some(at) = only_mark(&outer) else {
            return serde_json::to_vec_pretty(config);
        };
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let mut texts = Vec::with_capacity(config.members.len());
        let mut length = outer.len() + 8;
        for member in config.members.iter() {
            let text = kept_text(&mut kept.texts, member)?;
            length += text.len() + 6;
            texts.push(text);
        }
        // Members gone from every config leave their entries behind, and
        // so does each earlier version of a member still in one (an
        // `isActive` flip makes a new allocation): swept when the table
        // has grown by a quarter since the last sweep ([`sweep_due`]).
        if sweep_due(kept.texts.len(), kept.swept_to) {
            kept.texts.retain(|_, k| k.member.strong_count() > 0);
            kept.swept_to = kept.texts.len();
        }
        drop(kept);
        let mut out = Vec::with_capacity(length);
        out.extend_from_slice(&outer[..at]);
        out.extend_from_slice(b"\n  \"members\": [");
        for (i, text) in texts.iter().enumerate() {
            out.extend_from_slice(if i == 0 { b"\n    " } else { b",\n    " });
            out.extend_from_slice(text);
        }
        out.extend_from_slice(b"\n  ]");
        out.extend_from_slice(&outer[at + MARK.len()..]);
        Ok(out)
    }
}

/// Whether a table of `len` entries, `swept_to` after its last sweep, is
/// swept now: once it has grown by a quarter (and 64). A sweep per write
/// would cost every small team's write a pass over a big team's members;
/// at a quarter, a pass is paid for by a quarter as many new entries. A
/// member's earlier versions (each holding its text and, through its weak
/// reference, the member's old allocation) then number at most a quarter
/// of the live entries and 64 between sweeps, where doubling (until
/// 2026-12-02) let them number as many as the live ones: at 10,000 idle
/// teammates up to a KiB each. Members removed without new ones coming
/// (a team deleted) stay until that many new entries come.
fn sweep_due(len: usize, swept_to: usize) -> bool {
    len > swept_to + swept_to / 4 + 64
}

/// The text kept for `member`, or its text made and kept.
fn kept_text(
    kept: &mut hashbrown::HashMap<usize, Kept>,
    member: &Arc<Member>,
) -> serde_json::Result<Arc<[u8]>> {
    let key = Arc::as_ptr(member) as usize;
    if let Some(k) = kept.get(&key) {
        if k.member.upgrade().is_some_and(|m| Arc::ptr_eq(&m, member)) {
            return Ok(k.text.clone());
        }
    }
    let text = member_text(member)?;
    kept.insert(
        key,
        Kept {
            member: Arc::downgrade(member),
            text: text.clone(),
        },
    );
    Ok(text)
}

/// `member` as pretty JSON, each line after the first indented by four
/// more spaces: as it stands in the config's list (a member's text holds
/// no raw newline but between its lines).
fn member_text(member: &Member) -> serde_json::Result<Arc<[u8]>> {
    let alone = serde_json::to_vec_pretty(member)?;
    let lines = alone.iter().filter(|&&b| b == b'\n').count();
    let mut text = Vec::with_capacity(alone.len() + 4 * lines);
    for &b in &alone {
        text.push(b);
        if b == b'\n' {
            text.extend_from_slice(b"    ");
        }
    }
    Ok(text.into())
}

/// Where [`MARK`] is in `outer`, when it is there exactly once.
fn only_mark(outer: &[u8]) -> Option<usize> {
    let mut found = outer
        .windows(MARK.len())
        .enumerate()
        .filter(|(_, w)| *w == MARK)
        .map(|(i, _)| i);
    let at = found.next()?;
    found.next().is_none().then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn member(name: &str) -> Arc<Member> {
        let value = serde_json::json!({
            "agentId": format!("{name}@t"),
            "name": name,
            "color": "blue",
            "joinedAt": 1,
            "tmuxPaneId": "in-process",
            "cwd": "/w",
            "subscriptions": ["a", "b"],
            "prompt": "line one\nline two \"quoted\" \u{1F600}",
            "isActive": false,
            "someField": {"nested": [1, {"x": []}], "empty": {}}
        });
        Arc::new(serde_json::from_value(value).unwrap())
    }

    fn config(members: Vec<Arc<Member>>) -> TeamConfig {
        let value = serde_json::json!({
            "name": "t",
            "leadAgentId": "team-lead@t",
            "members": [],
            "zExtra": {"a": [1, 2]},
        });
        let mut config: TeamConfig = serde_json::from_value(value).unwrap();
        config.members = Arc::new(members);
        config
    }

    fn same_as_serde(text: &ConfigText, config: &TeamConfig) {
        assert_eq!(
            String::from_utf8(text.spliced(config).unwrap()).unwrap(),
            String::from_utf8(serde_json::to_vec_pretty(config).unwrap()).unwrap()
        );
    }

    #[test]
    fn the_text_is_serde_jsons_for_none_one_and_many_members() {
        let text = ConfigText::default();
        same_as_serde(&text, &config(vec![]));
        same_as_serde(&text, &config(vec![member("a")]));
        let many = config((0..5).map(|i| member(&format!("m{i}"))).collect());
        same_as_serde(&text, &many);
        // Again, from the kept texts.
        same_as_serde(&text, &many);
        assert_eq!(text.kept.lock().unwrap().texts.len(), 6);
    }

    #[test]
    fn a_member_changed_through_make_mut_is_written_as_it_is_now() {
        let text = ConfigText::default();
        let mut c = config(vec![member("a"), member("b")]);
        same_as_serde(&text, &c);
        // The only strong reference: make_mut could change it in place,
        // were the table not holding a weak one.
        Arc::make_mut(&mut Arc::make_mut(&mut c.members)[1]).is_active = Some(true);
        same_as_serde(&text, &c);
        let written = String::from_utf8(text.spliced(&c).unwrap()).unwrap();
        assert!(written.contains("\"isActive\": true"), "{written}");
    }

    #[test]
    fn an_extra_field_named_like_the_mark_is_written_by_serde_whole() {
        let text = ConfigText::default();
        let mut c = config(vec![member("a")]);
        c.extra.insert("members".into(), serde_json::json!([]));
        let shell = TeamConfig {
            members: Arc::default(),
            ..c.clone()
        };
        assert_eq!(only_mark(&serde_json::to_vec_pretty(&shell).unwrap()), None);
        same_as_serde(&text, &c);
    }

    #[test]
    fn entries_of_members_no_config_holds_are_swept() {
        let text = ConfigText::default();
        for round in 0..10 {
            let c = config((0..20).map(|i| member(&format!("r{round}-{i}"))).collect());
            same_as_serde(&text, &c);
        }
        // Each round's 20 are alive while it is written, so a sweep leaves
        // at most 20; after a write the table holds at most a quarter more
        // than the last sweep left, and 64.
        let len = text.kept.lock().unwrap().texts.len();
        assert!(!sweep_due(len, 20), "{len} entries");
        assert!(sweep_due(20 + 5 + 64 + 1, 20) && !sweep_due(20 + 5 + 64, 20));
    }

    #[test]
    fn a_big_team_s_earlier_versions_are_at_most_a_quarter_more() {
        // 400 members, each changed in every write (an `isActive` flip
        // makes a new allocation): the earlier versions are swept before
        // they pass a quarter of the live ones and 64. (Doubling let the
        // table reach 800.)
        let text = ConfigText::default();
        for _ in 0..6 {
            let c = config((0..400).map(|i| member(&format!("m{i}"))).collect());
            same_as_serde(&text, &c);
            let len = text.kept.lock().unwrap().texts.len();
            assert!(len <= 400 + 100 + 64, "{len} entries");
        }
    }
}
