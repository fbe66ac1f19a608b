//! The names of a team's members, indexed for the two questions every
//! registration asks ([`super::Team::add_member`]): which number makes a
//! wanted name unique (`echo` → `echo-7`), and whether the new name looks
//! like a member's ([`crate::store::names::check_distinct`]'s rule). A scan
//! of the members answers both, and at 10,000 members the two scans per
//! registration were a fifth of the CPU of spawning them.
//!
//! An index answers for exactly one members list: the allocation of the
//! config's `Arc<Vec<Arc<Member>>>` it was made from. It keeps a [`Weak`]
//! to that allocation, so the answer cannot go stale: while a weak
//! reference exists, `Arc::make_mut` cannot change the list in place (it
//! moves it to a new allocation, and the weak reference no longer points
//! at the config's list), `Arc::get_mut` refuses, and the address cannot be
//! reused by another list. Any change the index was not told of (a config
//! read from disk after another process wrote it, a member removed) is a
//! new allocation, for which the index is made again from the members:
//! one scan, where each registration used to make two.
//!
//! The caller that changes the list and tells the index
//! ([`MemberNames::take`], then [`MemberNames::keep`] once the list holds
//! what the index says) carries it over without a scan: a registration
//! adds its name, an `isActive` flip changes none.

use std::sync::{Arc, Mutex, Weak};

use hashbrown::{HashMap, HashSet};

use crate::error::Result;
use crate::store::names::{looks_like_member, LookalikeKey};
use crate::store::Member;

type Members = Vec<Arc<Member>>;

/// The names of one members list (see the module docs).
#[derive(Debug, Default)]
pub(super) struct MemberNames {
    names: HashSet<String>,
    /// Each skeleton as written, with the first member (in the list's
    /// order) that has it.
    exact: HashMap<String, String>,
    /// The same for the skeletons in lower case.
    folded: HashMap<String, String>,
    /// For a wanted name, a number no lower than the lowest free one
    /// (`wanted-n`, `n >= 2`): every number below it is taken.
    free_from: HashMap<String, usize>,
}

/// The indexes kept, by the address of the list each is for: one per team
/// whose list is current, and those of lists gone since the last keep.
#[derive(Default)]
struct Kept {
    lists: HashMap<usize, (Weak<Members>, MemberNames)>,
}

fn kept() -> std::sync::MutexGuard<'static, Kept> {
    static KEPT: std::sync::LazyLock<Mutex<Kept>> = std::sync::LazyLock::new(Default::default);
    KEPT.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemberNames {
    /// The index of `members`: the one kept for this very list, taken out
    /// of the table, or one made from the members.
    pub(super) fn take(members: &Arc<Members>) -> MemberNames {
        Self::take_kept(members).unwrap_or_else(|| Self::of(members))
    }

    /// The index kept for this very list, taken out of the table; `None`
    /// when there is none (nothing is made).
    pub(super) fn take_kept(members: &Arc<Members>) -> Option<MemberNames> {
        // An entry's weak reference keeps its list's allocation, so no
        // other list can have its address: the entry at `members`'s
        // address is `members`'s own.
        let key = Arc::as_ptr(members) as usize;
        kept().lists.remove(&key).map(|(_, names)| names)
    }

    /// Keeps this index for `members`, which must hold exactly the names
    /// it does (the caller made the change it was told of).
    pub(super) fn keep(self, members: &Arc<Members>) {
        debug_assert!(
            {
                let listed: HashSet<&str> = members.iter().map(|m| m.name.as_str()).collect();
                listed.len() == self.names.len() && listed.iter().all(|n| self.names.contains(*n))
            },
            "a member index kept for a list it does not describe"
        );
        let mut kept = kept();
        kept.lists.insert(
            Arc::as_ptr(members) as usize,
            (Arc::downgrade(members), self),
        );
        // A list that has gone (a config read anew after another process
        // wrote it) leaves its entry behind, as big as its team: swept at
        // every keep, a pass over one entry per team.
        kept.lists.retain(|_, (list, _)| list.strong_count() > 0);
    }

    /// An index made from `members`, in their order.
    fn of(members: &Members) -> MemberNames {
        let mut index = MemberNames::default();
        let names = members.iter().map(|m| m.name.as_str());
        LookalikeKey::each_remembered(names, |name, key| {
            index.insert_keyed(name, key);
            false
        });
        // A list written by another program may hold one name twice.
        for m in members {
            index.names.insert(m.name.clone());
        }
        index
    }

    /// The name a member who wants `wanted` gets: `wanted` while no member
    /// has it, else `wanted-n` with the lowest free `n` from 2.
    pub(super) fn unique(&mut self, wanted: &str) -> String {
        if !self.names.contains(wanted) {
            return wanted.to_string();
        }
        let from = self.free_from.entry_ref(wanted).or_insert(2);
        loop {
            let name = format!("{wanted}-{from}");
            if !self.names.contains(&name) {
                return name;
            }
            *from += 1;
        }
    }

    /// Refuses `name`, which no member has (what [`MemberNames::unique`]
    /// gives), when it looks like a member's name (the same skeleton, as
    /// written or in lower case): the error of
    /// [`crate::store::names::check_distinct`], naming a member it looks
    /// like (the first in the list's order with that skeleton).
    pub(super) fn check_distinct(&self, name: &str) -> Result<()> {
        let key = LookalikeKey::of(name);
        let alike = [self.exact.get(&key.exact), self.folded.get(&key.folded)];
        match alike.into_iter().flatten().find(|other| *other != name) {
            Some(other) => Err(looks_like_member(name, other)),
            None => Ok(()),
        }
    }

    /// Adds `name`, which the list now holds too.
    pub(super) fn insert(&mut self, name: &str) {
        self.insert_keyed(name, &LookalikeKey::of(name));
        self.names.insert(name.to_string());
    }

    fn insert_keyed(&mut self, name: &str, key: &LookalikeKey) {
        self.exact
            .entry_ref(key.exact.as_str())
            .or_insert_with(|| name.to_string());
        self.folded
            .entry_ref(key.folded.as_str())
            .or_insert_with(|| name.to_string());
    }
}

#[cfg(test)]
mod tests;
