//! The lead component's grant: what the person gives a lead in the manifest
//! ([`LeadSpec`], the catalogue of [`CatalogueEntry`]s) and the one type that
//! answers what the lead may give from it ([`LeadGrant`]). Pure: no file,
//! no task, no lock; the seat ([`super::lead`]) and the approval path
//! ([`super::approvals`]) ask it.
//!
//! | file | what it owns |
//! |---|---|
//! | `spec.rs` | [`LeadSpec`] and [`CatalogueEntry`]: the lead's component, its own grant, its limits and its catalogue |
//! | `lead_grant.rs` | [`LeadGrant`], the `delegate` exception ([`delegates`]), and what a spawn gets ([`LeadGrant::may_spawn`]) |
//! | `answer_grant.rs` | what an answer may allow or approve ([`LeadGrant::within_entry`], [`LeadGrant::within_own`]); a lead never answers its own request ([`OWN_REQUEST`]) |

mod answer_grant;
mod lead_grant;
mod spec;

pub use answer_grant::{is_own_request, OWN_REQUEST};
pub use lead_grant::{delegates, mode_at_most, Granted, LeadGrant};
pub use spec::{
    CatalogueEntry, LeadSpec, DEFAULT_MAX_REFUSED_ANSWERS_PER_TURN,
    DEFAULT_MAX_REFUSED_ANSWERS_TOTAL, DEFAULT_MAX_SPAWNS_TOTAL, DEFAULT_MAX_TEAMMATES,
};
