//! The messages a run exchanged, counted from the team's histories and
//! inboxes before its files go ([`count_messages`]).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::protocol::ProtocolMessage;
use crate::store::{InboxMessage, Team};

/// Messages found in the team's histories (consumed) and inboxes (unread).
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageCounts {
    /// Every message, read or not.
    pub total: usize,
    /// Sent to the lead by anyone else.
    pub to_lead: usize,
    /// Sent by the lead.
    pub from_lead: usize,
    /// Written by the host itself (`teamhost`: a deny, a shutdown notice),
    /// to anyone but the lead.
    pub from_host: usize,
    /// Neither from nor to the lead, nor from the host.
    pub between_teammates: usize,
    /// Still unread in an inbox.
    pub unread: usize,
    /// `text` for plain messages, else the protocol `type`.
    pub by_kind: BTreeMap<String, usize>,
}

impl MessageCounts {
    fn add(&mut self, to: &str, m: &InboxMessage, lead: &str) {
        self.total += 1;
        if m.from == lead {
            self.from_lead += 1;
        } else if to == lead {
            self.to_lead += 1;
        } else if m.from == crate::protocol::HOST_SENDER {
            self.from_host += 1;
        } else {
            self.between_teammates += 1;
        }
        let kind = match ProtocolMessage::parse(&m.text).kind() {
            Some(k) => k.to_string(),
            None => "text".into(),
        };
        *self.by_kind.entry(kind).or_default() += 1;
    }
}

/// Counts the messages of `team` (its histories and inboxes), `lead`'s
/// name telling which went to or from the lead.
pub fn count_messages(team: &Team, lead: &str) -> anyhow::Result<MessageCounts> {
    let mut counts = MessageCounts::default();
    for stem in team.agents_with_mail()? {
        for m in team.history(&stem)? {
            counts.add(&stem, &m, lead);
        }
        for m in team.unread(&stem)? {
            counts.unread += 1;
            counts.add(&stem, &m, lead);
        }
    }
    Ok(counts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn from(name: &str) -> InboxMessage {
        serde_json::from_value(serde_json::json!({"from": name, "text": "hi"})).unwrap()
    }

    #[test]
    fn the_hosts_own_messages_are_not_counted_between_teammates() {
        let mut c = MessageCounts::default();
        c.add("scribe", &from(crate::protocol::HOST_SENDER), "team-lead");
        c.add("scribe", &from("alice"), "team-lead");
        c.add(
            "team-lead",
            &from(crate::protocol::HOST_SENDER),
            "team-lead",
        );
        c.add("alice", &from("team-lead"), "team-lead");
        assert_eq!(
            (
                c.from_host,
                c.between_teammates,
                c.to_lead,
                c.from_lead,
                c.total
            ),
            (1, 1, 1, 1, 4)
        );
    }
}
