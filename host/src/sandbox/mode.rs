//! [`PermissionMode`]: the six permission modes, spelled as the reference
//! spells them on `--permission-mode` and in `plan_approval_response`'s
//! `permissionMode` (seeds 004 §7, 002 §9.4).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// How much a teammate may do without asking. What each mode allows is
/// tabled in [`crate::sandbox`]; this type only names them.
///
/// Parsing is exact and case-sensitive, as the reference CLI's is:
/// `"acceptEdits"` parses, `"acceptedits"` is refused with a hint.
/// The default is [`PermissionMode::Default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PermissionMode {
    /// `default`: reads inside the capability directory run; edits and Bash
    /// ask the lead.
    #[default]
    Default,
    /// `acceptEdits`: reads and edits inside the capability directory run;
    /// Bash asks.
    AcceptEdits,
    /// `bypassPermissions`: everything inside the capability directory runs
    /// without asking; deny rules still apply.
    BypassPermissions,
    /// `plan`: read-only, except the plan file; left only through plan
    /// approval.
    Plan,
    /// `dontAsk`: like `default`, but what would ask is denied instead.
    DontAsk,
    /// `delegate`: coordination only (team, tasks, messaging).
    Delegate,
}

impl PermissionMode {
    /// Every mode, in the reference's order.
    pub const ALL: [PermissionMode; 6] = [
        PermissionMode::Default,
        PermissionMode::AcceptEdits,
        PermissionMode::BypassPermissions,
        PermissionMode::Plan,
        PermissionMode::DontAsk,
        PermissionMode::Delegate,
    ];

    /// The reference's spelling (`"acceptEdits"`, `"dontAsk"`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            PermissionMode::Default => "default",
            PermissionMode::AcceptEdits => "acceptEdits",
            PermissionMode::BypassPermissions => "bypassPermissions",
            PermissionMode::Plan => "plan",
            PermissionMode::DontAsk => "dontAsk",
            PermissionMode::Delegate => "delegate",
        }
    }
}

impl fmt::Display for PermissionMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is not one of the six modes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseModeError {
    /// The string as given.
    pub given: String,
}

impl fmt::Display for ParseModeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown permission mode {:?}", self.given)?;
        if let Some(mode) = PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str().eq_ignore_ascii_case(self.given.trim()))
        {
            write!(
                f,
                " (modes are case-sensitive: did you mean {:?}?)",
                mode.as_str()
            )?;
        }
        f.write_str("; valid modes are: ")?;
        for (i, mode) in PermissionMode::ALL.into_iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            f.write_str(mode.as_str())?;
        }
        Ok(())
    }
}

impl std::error::Error for ParseModeError {}

impl FromStr for PermissionMode {
    type Err = ParseModeError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        PermissionMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| ParseModeError {
                given: s.to_owned(),
            })
    }
}

impl Serialize for PermissionMode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for PermissionMode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_round_trips_through_its_reference_spelling() {
        for mode in PermissionMode::ALL {
            assert_eq!(mode.as_str().parse::<PermissionMode>(), Ok(mode));
            assert_eq!(mode.to_string(), mode.as_str());
        }
        let spellings: Vec<_> = PermissionMode::ALL.iter().map(|m| m.as_str()).collect();
        assert_eq!(
            spellings,
            [
                "default",
                "acceptEdits",
                "bypassPermissions",
                "plan",
                "dontAsk",
                "delegate"
            ]
        );
    }

    #[test]
    fn an_unknown_mode_is_refused_with_the_list_of_valid_modes() {
        let err = "yolo".parse::<PermissionMode>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown permission mode \"yolo\"; valid modes are: default, acceptEdits, \
             bypassPermissions, plan, dontAsk, delegate"
        );
    }

    #[test]
    fn a_mode_in_the_wrong_case_is_refused_with_a_hint() {
        let err = "acceptedits".parse::<PermissionMode>().unwrap_err();
        assert!(
            err.to_string().contains("did you mean \"acceptEdits\"?"),
            "{err}"
        );
    }

    #[test]
    fn the_default_mode_is_default() {
        assert_eq!(PermissionMode::default(), PermissionMode::Default);
    }

    #[test]
    fn modes_serialize_as_their_reference_spelling() {
        let json = serde_json::to_string(&PermissionMode::BypassPermissions).unwrap();
        assert_eq!(json, "\"bypassPermissions\"");
        let back: PermissionMode = serde_json::from_str("\"dontAsk\"").unwrap();
        assert_eq!(back, PermissionMode::DontAsk);
        let err = serde_json::from_str::<PermissionMode>("\"Plan\"").unwrap_err();
        assert!(err.to_string().contains("valid modes are"), "{err}");
    }
}
