//! The store limiter of one instance: each linear memory at most
//! `memory_bytes`, and every byte of it drawn from its tree's pool
//! (`memory_total_bytes`, [`TreeBudget::take_memory`]) and given back when
//! the instance goes. A growth past either traps with a message naming the
//! limit; an instance that cannot get its initial memory fails to start.

use std::sync::Arc;

use wasmtime::ResourceLimiter;

use crate::runtime::TreeBudget;

/// Most elements of one table.
const TABLE_ELEMENTS: usize = 100_000;
/// Most core instances in one store.
const INSTANCES: usize = 100;

/// One instance's limiter (the store's data holds it).
pub(crate) struct TreeLimiter {
    budget: Arc<TreeBudget>,
    /// Largest single linear memory.
    per_memory: usize,
    /// Bytes this instance took from the pool.
    held: usize,
    /// The last growth taken, given back if the growth itself fails.
    last: usize,
}

impl TreeLimiter {
    pub(crate) fn new(budget: Arc<TreeBudget>, per_memory: usize) -> TreeLimiter {
        TreeLimiter {
            budget,
            per_memory,
            held: 0,
            last: 0,
        }
    }
}

impl Drop for TreeLimiter {
    fn drop(&mut self) {
        self.budget.give_memory(self.held);
    }
}

impl ResourceLimiter for TreeLimiter {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > self.per_memory {
            return Err(wasmtime::Error::msg(format!(
                "memory limit: the guest tried to grow its memory past {} MiB ([teammate.limits] memory_mb)",
                self.per_memory >> 20
            )));
        }
        let grow = desired.saturating_sub(current);
        self.budget
            .take_memory(grow)
            .map_err(wasmtime::Error::msg)?;
        self.held += grow;
        self.last = grow;
        Ok(true)
    }

    fn memory_grow_failed(&mut self, error: wasmtime::Error) -> wasmtime::Result<()> {
        let last = std::mem::take(&mut self.last);
        self.budget.give_memory(last);
        self.held -= last;
        Err(error.context("memory limit: the host could not grow the guest's memory"))
    }

    fn table_growing(
        &mut self,
        _current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        if desired > TABLE_ELEMENTS {
            return Err(wasmtime::Error::msg(format!(
                "memory limit: the guest tried to grow a table past {TABLE_ELEMENTS} elements"
            )));
        }
        Ok(true)
    }

    fn instances(&self) -> usize {
        INSTANCES
    }
}
