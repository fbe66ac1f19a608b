//! The names teamhost gives a new member: what a teammate, a catalogue entry
//! or a sub-agent may be called when teamhost (or a lead component through
//! it) names it. Reading a team is not held to these rules: Claude Code
//! names its own members, and their entries load as written
//! ([`super::agent_file_stem`] is all a read checks).
//!
//! A new name is refused when it could be taken for someone else's:
//!
//! | refused | why |
//! |---|---|
//! | what [`super::agent_file_stem`] refuses | empty, too long, path-like, a leading `.` |
//! | `@` | it separates name and team in an agent id (`name@team`) |
//! | leading or trailing whitespace, two spaces in a row, any whitespace but U+0020 | `team-lead ` shows as `team-lead` |
//! | a leading `-` | `teamhost logs -rf` reads it as options |
//! | a bidi control (U+202E, …) | it reorders how the name is shown |
//! | a control, format (Unicode category Cf) or default-ignorable character (zero-width, soft hyphen, variation selectors, …) | it shows as nothing |
//! | another non-ASCII character outside Unicode's General Security Profile (UTS #39 `Identifier_Status=Allowed`) | symbols, private use, unassigned and rarely used scripts: letters and digits of the scripts in use today pass (`Zoë`, `José`, `Дмитрий`, `太郎`) |
//! | a name with the skeleton of a [`RESERVED`] name, or of it in lower case | `team‐lead` (U+2010), `tеam-lead` (Cyrillic `е`), `User`, `SYSTEM` |
//!
//! [`check_distinct`] then keeps two members of one team from sharing a
//! skeleton (`bob` and `bоb`) or differing only by case (`Bob` and `bob`):
//! names are file stems and directory names, and one case-insensitive
//! filesystem would put both in one file.
//!
//! The skeleton is UTS #39's (NFD, default-ignorables removed, each
//! character replaced by its prototype from Unicode's `confusables.txt`,
//! NFD again), from the `unicode-security` crate rather than a table of our
//! own: the look-alikes of even the four reserved names run to hundreds of
//! characters across scripts, a table kept by hand would miss some, and
//! the crate's tables are generated from Unicode's data (version 18) with
//! nothing to keep in step but its pinned version.

use unicode_security::{skeleton, GeneralSecurityProfile};

use crate::error::{Error, Result};

/// Names a new member may not have nor look like, and whose they are: the
/// lead's ([`crate::store::config::LEAD_NAME`], spelled here so the names
/// stay below the config; a test holds the two equal), the person's (the sender of
/// the goal and of what they type to a teammate), and the host's own
/// senders ([`crate::protocol::HOST_SENDER`], and `system`, which a model
/// reads as its platform speaking).
pub const RESERVED: &[(&str, &str)] = &[
    ("team-lead", "the lead"),
    ("user", "the person (their goal and messages come from it)"),
    (crate::protocol::HOST_SENDER, "the host's own notices"),
    ("system", "the system's notices"),
];

/// What to do, said at the end of every refusal.
const FIX: &str = "choose another name (letters, digits, '-' and '_', like \"reviewer-2\")";

/// Refuses `name` for a new member unless it passes every rule in the
/// module's table (the error is [`Error::InvalidName`] with kind `agent`
/// and says which rule and what to do). It does not look at the team: see
/// [`check_distinct`] for that.
pub fn check_new_member_name(name: &str) -> Result<()> {
    let refuse = |reason: String| {
        Err(Error::InvalidName {
            kind: "agent",
            name: name.to_string(),
            reason: format!("{reason}; {FIX}"),
        })
    };
    match super::agent_file_stem(name) {
        Err(Error::InvalidName { reason, .. }) => return refuse(reason),
        other => other?,
    };
    if name.contains('@') {
        return refuse("holds '@', which separates name and team in an agent id".into());
    }
    if name.starts_with(char::is_whitespace) || name.ends_with(char::is_whitespace) {
        return refuse("starts or ends with whitespace, which does not show".into());
    }
    if name.starts_with('-') {
        return refuse(
            "starts with '-', so a command such as `teamhost logs` would read it as an option"
                .into(),
        );
    }
    if name.contains("  ") {
        return refuse("holds two spaces in a row, which show as one".into());
    }
    if let Some(why) = name.chars().find_map(refused_char) {
        return refuse(why);
    }
    if let Some((reserved, whose)) = reserved_lookalike(name) {
        let alike = if name == reserved {
            String::new()
        } else {
            format!(" (it reads as {reserved:?})")
        };
        return refuse(format!("is reserved for {whose}{alike}"));
    }
    Ok(())
}

/// Refuses `name` when it looks like one of `others` without being it:
/// the same UTS #39 skeleton, as given or in lower case. The error names
/// the member it looks like. A name equal to one of `others` passes here:
/// the callers treat a taken name their own way (a conflict, or a `-2`).
pub fn check_distinct<'a>(name: &str, others: impl IntoIterator<Item = &'a str>) -> Result<()> {
    let key = LookalikeKey::of(name);
    let looks_alike = LookalikeKey::each_remembered(others, |other, theirs| {
        other != name && theirs.matches(&key)
    });
    match looks_alike {
        Some(other) => Err(looks_like_member(name, other)),
        None => Ok(()),
    }
}

/// The refusal of `name` because it looks like `other`, another member's
/// name ([`check_distinct`]'s, and the member index's).
pub(crate) fn looks_like_member(name: &str, other: &str) -> Error {
    Error::InvalidName {
        kind: "agent",
        name: name.to_string(),
        reason: format!(
            "looks like {other:?}, another member's name (the same letters to the \
             eye, or the same but for case, which one file on a case-insensitive filesystem \
             would hold); {FIX} that differs visibly"
        ),
    }
}

/// The most names whose skeletons [`LookalikeKey::each_remembered`] keeps.
const REMEMBERED: usize = 65_536;

/// A name's two skeletons: as written, and in lower case. Two names look
/// alike when either is the same.
pub(crate) struct LookalikeKey {
    pub(crate) exact: String,
    pub(crate) folded: String,
}

impl LookalikeKey {
    /// `name`'s skeletons, made anew.
    pub(crate) fn of(name: &str) -> Self {
        LookalikeKey {
            exact: skeleton(name).collect(),
            folded: skeleton(&name.to_lowercase()).collect(),
        }
    }

    /// Calls `hit` with each of `names` and its [`LookalikeKey::of`], in
    /// order, until it returns `true`, and returns that name. The keys are
    /// remembered: a team's registrations compare each new name with every
    /// member's, and a skeleton costs far more than a lookup (10,000
    /// members took minutes to register, most of it here). One lock is
    /// taken for all of `names`, and the table hashes with foldhash, not
    /// SipHash: at 10,000 members a lock, a SipHash and a reference count
    /// per member were still a tenth of a spawn. At most [`REMEMBERED`]
    /// names are kept; the table starts afresh when full, so what any
    /// caller names cannot grow it for ever.
    pub(crate) fn each_remembered<'a>(
        names: impl IntoIterator<Item = &'a str>,
        mut hit: impl FnMut(&str, &LookalikeKey) -> bool,
    ) -> Option<&'a str> {
        use std::sync::{Mutex, OnceLock};
        static KEYS: OnceLock<Mutex<hashbrown::HashMap<String, LookalikeKey>>> = OnceLock::new();
        let keys = KEYS.get_or_init(Default::default);
        let mut known = keys.lock().unwrap_or_else(|p| p.into_inner());
        for name in names {
            let matched = match known.get(name) {
                Some(key) => hit(name, key),
                None => {
                    if known.len() >= REMEMBERED {
                        known.clear();
                    }
                    let key = LookalikeKey::of(name);
                    let matched = hit(name, &key);
                    known.insert(name.to_string(), key);
                    matched
                }
            };
            if matched {
                return Some(name);
            }
        }
        None
    }

    fn matches(&self, other: &LookalikeKey) -> bool {
        self.exact == other.exact || self.folded == other.folded
    }
}

/// The reserved name `name` is or looks like, with whose it is.
fn reserved_lookalike(name: &str) -> Option<(&'static str, &'static str)> {
    let key = LookalikeKey::of(name);
    RESERVED
        .iter()
        .find(|(reserved, _)| LookalikeKey::of(reserved).matches(&key))
        .copied()
}

/// Why `c` may not be in a new name, or `None` when it may.
fn refused_char(c: char) -> Option<String> {
    let code = format!("U+{:04X}", c as u32);
    if is_bidi_control(c) {
        return Some(format!(
            "holds the bidi control {code}, which reorders how the name is shown"
        ));
    }
    if c.is_control() {
        return Some(format!("holds the control character {code}"));
    }
    if c.is_whitespace() && c != ' ' {
        return Some(format!(
            "holds the whitespace {code}; only a plain space (U+0020) may separate words"
        ));
    }
    if c.is_ascii() {
        return None;
    }
    if is_invisible(c) {
        return Some(format!(
            "holds {code}, an invisible or format character (zero-width, soft hyphen, \
             variation selector, …) that shows as nothing"
        ));
    }
    if !c.identifier_allowed() {
        return Some(format!(
            "holds {code}, which Unicode's identifier profile (UTS #39) restricts: \
             a symbol, a private-use or unassigned character, or a rarely used script"
        ));
    }
    None
}

/// Unicode's Bidi_Control characters: marks, embeddings, overrides and
/// isolates.
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{61c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// A format character (category Cf) or a default-ignorable one: what a
/// renderer draws as nothing.
fn is_invisible(c: char) -> bool {
    static INVISIBLE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"^[\p{Cf}\p{Default_Ignorable_Code_Point}]$")
            .expect("a valid Unicode class")
    });
    let mut buf = [0u8; 4];
    INVISIBLE.is_match(c.encode_utf8(&mut buf))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(name: &str) -> String {
        match check_new_member_name(name) {
            Ok(()) => panic!("{name:?} was accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_reserved_names_are_the_ones_the_team_uses() {
        assert_eq!(RESERVED[0].0, crate::store::config::LEAD_NAME);
        assert_eq!(RESERVED[2].0, crate::protocol::HOST_SENDER);
    }

    #[test]
    fn ordinary_names_are_accepted() {
        for name in [
            "fixer",
            "bob-the-builder",
            "reviewer_2",
            "Zoë",
            "Zoe\u{308}",
            "José",
            "Дмитрий",
            "太郎",
            "code reviewer",
            "v1.2",
            "lead",
            "team-lead-2",
            "users",
        ] {
            assert!(
                check_new_member_name(name).is_ok(),
                "{name:?}: {}",
                refused(name)
            );
        }
    }

    #[test]
    fn look_alikes_of_someone_else_are_refused_saying_why_and_what_to_do() {
        for (name, why) in [
            ("user", "reserved for the person"),
            ("User", "reserved for the person"),
            ("team-lead", "reserved for the lead"),
            ("TEAM-LEAD", "reserved for the lead"),
            ("team-lead ", "ends with whitespace"),
            (" team-lead", "starts or ends with whitespace"),
            ("team\u{2010}lead", "reads as \"team-lead\""),
            ("t\u{435}am-lead", "reads as \"team-lead\""),
            ("team-Iead", "reads as \"team-lead\""),
            ("team-lead\u{200b}", "U+200B, an invisible"),
            ("team\u{ad}-lead", "U+00AD, an invisible"),
            ("user\u{fe0f}", "U+FE0F, an invisible"),
            ("\u{202e}dael-maet", "bidi control U+202E"),
            ("a\u{2066}b", "bidi control U+2066"),
            ("-rf", "read it as an option"),
            ("--help", "read it as an option"),
            ("teamhost", "reserved for the host's own notices"),
            ("system", "reserved for the system's notices"),
            ("team\u{a0}lead", "whitespace U+00A0"),
            ("team\tlead", "control character"),
            ("team  lead", "two spaces"),
            ("bob@team", "'@'"),
            ("\u{e000}x", "U+E000"),
            ("bob\u{1f916}", "U+1F916"),
        ] {
            let err = refused(name);
            assert!(err.contains(why), "{name:?}: {err}");
            assert!(err.contains("choose another name"), "{name:?}: {err}");
            assert!(
                !err.contains('\u{202e}') && !err.contains('\u{200b}'),
                "the error shows no invisible character: {err:?}"
            );
        }
    }

    #[test]
    fn names_that_read_as_a_member_of_the_team_are_refused_naming_it() {
        let members = ["team-lead", "bob", "Zoë"];
        for name in ["Bob", "b\u{43e}b", "BOB", "zoë", "Zoe\u{308}"] {
            let err = check_distinct(name, members).unwrap_err().to_string();
            assert!(err.contains("looks like"), "{name:?}: {err}");
            assert!(err.contains("another member's name"), "{err}");
        }
        assert!(
            check_distinct("bob", members).is_ok(),
            "the same name is the caller's call"
        );
        assert!(check_distinct("alice", members).is_ok());
        assert!(check_distinct("bob-2", members).is_ok());
        let err = check_distinct("Bob", members).unwrap_err().to_string();
        assert!(err.contains("\"bob\""), "names the member: {err}");
    }
}
