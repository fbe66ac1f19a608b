//! `teamhost:agent/state`: a teammate's own small saved state, kept by the
//! host in its home ([`SavedState`](crate::home::kept::SavedState)) so it
//! outlives the instance. Only the teammate's own file is reachable: the
//! path comes from its identity, fixed at spawn, never from the guest.
//!
//! Each `save` and `clear` is a synced write in the host's home: they are
//! counted per turn and over the teammate's life
//! (`max_state_saves_per_turn`, `max_state_saves_total`); one more traps,
//! naming the limit ("state-save limit").

use super::{blocking, StateGlue, WitError};
use crate::home::kept::{SavedState, MAX_SAVED_STATE};
use crate::runtime::bindings::state::Host;
use crate::runtime::GuestError;

impl StateGlue<'_> {
    fn saved_state(&self) -> Result<SavedState, WitError> {
        self.state.saved.clone().ok_or_else(|| {
            WitError::Unavailable("this host keeps no saved state for this teammate".into())
        })
    }

    /// Counts one synced write of the saved state; `Err` is the trap.
    fn count_save(&self) -> wasmtime::Result<()> {
        self.fixed
            .budget
            .count_state_save(&self.state.saves_turn)
            .map_err(wasmtime::Error::msg)
    }
}

impl Host for StateGlue<'_> {
    async fn max_bytes(&mut self) -> wasmtime::Result<u32> {
        Ok(MAX_SAVED_STATE as u32)
    }

    async fn save(&mut self, data: Vec<u8>) -> Result<(), GuestError> {
        let state = self.saved_state()?;
        self.count_save()?;
        blocking(move || state.save(&data)).await
    }

    async fn load(&mut self) -> Result<Option<Vec<u8>>, GuestError> {
        let state = self.saved_state()?;
        blocking(move || state.load()).await
    }

    async fn clear(&mut self) -> Result<(), GuestError> {
        let state = self.saved_state()?;
        self.count_save()?;
        blocking(move || state.clear()).await
    }
}
