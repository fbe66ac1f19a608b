//! [`ToolRules`] as the reference writes them: two lists of rule texts,
//! `allowedTools` and `disallowedTools`. Serialised so, a teammate's rules
//! keep the shape of its member entry and of the records that bring it
//! back; read back through [`ToolRules::new`], so a list that does not
//! parse is refused with the rule and the list it is in.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::ToolRules;

/// The two lists, as text (missing keys: empty).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Lists {
    #[serde(default)]
    allowed_tools: Vec<String>,
    #[serde(default)]
    disallowed_tools: Vec<String>,
}

impl ToolRules {
    /// The allow rules as written (each trimmed), in order.
    pub fn allowed_texts(&self) -> Vec<String> {
        self.allowed()
            .iter()
            .map(|r| r.text().to_string())
            .collect()
    }

    /// The deny rules as written (each trimmed), in order.
    pub fn disallowed_texts(&self) -> Vec<String> {
        self.disallowed()
            .iter()
            .map(|r| r.text().to_string())
            .collect()
    }

    /// Whether there are no rules at all.
    pub fn is_empty(&self) -> bool {
        self.allowed().is_empty() && self.disallowed().is_empty()
    }
}

impl Serialize for ToolRules {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        Lists {
            allowed_tools: self.allowed_texts(),
            disallowed_tools: self.disallowed_texts(),
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ToolRules {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let lists = Lists::deserialize(deserializer)?;
        ToolRules::new(lists.allowed_tools, lists.disallowed_tools)
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_round_trip_through_their_two_lists() {
        let rules = ToolRules::new(["Read", "Bash(git log:*)"], ["Write"]).unwrap();
        let json = serde_json::to_value(&rules).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"allowedTools": ["Read", "Bash(git log:*)"], "disallowedTools": ["Write"]})
        );
        assert_eq!(serde_json::from_value::<ToolRules>(json).unwrap(), rules);
    }

    #[test]
    fn a_list_that_does_not_parse_is_refused_naming_the_rule() {
        let bad = serde_json::json!({"allowedTools": ["Bash(git:*"]});
        let e = serde_json::from_value::<ToolRules>(bad).unwrap_err();
        assert!(e.to_string().contains("Bash(git:*"), "{e}");
    }
}
