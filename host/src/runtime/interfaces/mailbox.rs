//! `teamhost:agent/mailbox`: the teammate's own inbox and raw delivery.
//!
//! Reading the own inbox (`unread`, `take`, `history`) has no reference tool,
//! so no rule can take it away; `deliver` puts a message in another inbox,
//! so it is `SendMessage` for the rules and a direct message for the
//! coordination limits.

use super::{blocking, to_wit_message, CoordinationGlue};
use crate::runtime::bindings::mailbox::{Host, Message};
use crate::runtime::GuestError;
use crate::sandbox::{CoordinationKind, MailboxCall, TeamAct};
use crate::store::OutgoingMessage;

/// The gate of one `mailbox` call.
fn gate(call: MailboxCall) -> CoordinationKind {
    CoordinationKind::Mailbox(call)
}

impl Host for CoordinationGlue<'_> {
    async fn unread(&mut self) -> Result<Vec<Message>, GuestError> {
        self.permissions
            .authorize_coordination(gate(MailboxCall::Unread))?;
        self.coordination.settle_take().await;
        let (team, me) = (self.team.store.clone(), self.fixed.identity.name.clone());
        blocking(move || Ok(team.unread(&me)?.iter().map(to_wit_message).collect())).await
    }

    async fn take(
        &mut self,
        sender: Option<String>,
        limit: Option<u32>,
    ) -> Result<Vec<Message>, GuestError> {
        self.permissions
            .authorize_coordination(gate(MailboxCall::Take))?;
        self.coordination.settle_take().await;
        let (team, me) = (self.team.store.clone(), self.fixed.identity.name.clone());
        let mut left = limit.map_or(usize::MAX, |n| n as usize);
        blocking(move || {
            let taken = team.take_where(&me, |m| {
                let pick = left > 0 && sender.as_deref().is_none_or(|s| s == m.from);
                if pick {
                    left -= 1;
                }
                pick
            })?;
            Ok(taken.iter().map(to_wit_message).collect())
        })
        .await
    }

    async fn history(&mut self, limit: u32) -> Result<Vec<Message>, GuestError> {
        self.permissions
            .authorize_coordination(gate(MailboxCall::History))?;
        self.coordination.settle_take().await;
        let (team, me) = (self.team.store.clone(), self.fixed.identity.name.clone());
        blocking(move || {
            let all = team.history(&me)?;
            let skip = all.len().saturating_sub(limit as usize);
            Ok(all[skip..].iter().map(to_wit_message).collect())
        })
        .await
    }

    async fn deliver(
        &mut self,
        to: String,
        text: String,
        summary: Option<String>,
    ) -> Result<(), GuestError> {
        self.permissions
            .authorize_coordination(gate(MailboxCall::Deliver))
            .and_then(|()| {
                self.check_outgoing("the message", Some(&to), &text, summary.as_deref())
            })?;
        self.coordination
            .count_act(&self.fixed.budget, TeamAct::Message)?;
        self.coordination.count_team_bytes(
            &self.fixed.budget,
            "the message",
            text.len() + summary.as_ref().map_or(0, String::len),
        )?;
        let team = self.team.store.clone();
        let msg = OutgoingMessage {
            from: self.fixed.identity.name.clone(),
            text,
            summary,
            color: Some(self.fixed.identity.color.clone()),
        };
        blocking(move || team.send(&to, msg).map(|_| ())).await
    }
}
