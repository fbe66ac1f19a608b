//! Fiber stacks that give their memory back between turns.
//!
//! A guest runs on a fiber stack of its store (wasmtime's async support);
//! the store keeps that stack for its next call. Whatever depth one turn
//! reached — the guest's frames and the host calls it made — stays resident
//! for the teammate's whole life: about 17 KiB for an idle `echo`, most of
//! what an idle teammate costs after the host's own bookkeeping, and two of
//! the process's memory mappings (`vm.max_map_count`, 65,530 by default,
//! bounds how many teammates one process can hold). So teamhost makes its
//! stacks itself ([`TrimmingStacks`], given to wasmtime through
//! `Config::with_host_stack`) and each [`Instance`](super::Instance)
//! *parks* its stack after every turn (and, through `Instance::rest`,
//! before a wait that no turn came before), when no frame on it is live: the
//! usable part is replaced by fresh inaccessible memory (its pages go back
//! to the kernel, and it merges with the guard page into one mapping). The
//! instance *unparks* it before its next call (read-write again, zero-filled
//! on touch, as a fresh stack); an unpark that fails — no mapping left — is
//! an error for that turn, not a crash.
//!
//! A stack learns which instance it belongs to from a task-local slot the
//! instance sets around every call into its store
//! ([`StackSlot::scope`]); a stack made outside any slot is simply never
//! trimmed. A dropped stack clears its slot first, so a trim never touches
//! memory that is no longer the stack.

use std::ops::Range;
use std::sync::{Arc, Mutex};

use wasmtime::{StackCreator, StackMemory};

tokio::task_local! {
    /// The slot of the instance whose call is running on this task.
    static SLOT: Arc<StackSlot>;
}

/// Where one instance's stack is, once it has one, and whether it is
/// parked.
#[derive(Debug, Default)]
pub(crate) struct StackSlot {
    stack: Mutex<Option<Parkable>>,
}

#[derive(Debug)]
struct Parkable {
    /// The usable part (below it, the guard page).
    usable: Range<usize>,
    parked: bool,
}

impl StackSlot {
    /// Runs `call` with this slot current, so a stack made during it is
    /// registered here.
    pub(crate) async fn scope<F: std::future::Future>(self: &Arc<Self>, call: F) -> F::Output {
        SLOT.scope(self.clone(), call).await
    }

    /// Parks the stack: its pages go back to the kernel and it becomes one
    /// inaccessible mapping with its guard. Only between calls: no frame on
    /// it may be live, and [`Self::unpark`] must come before the next call.
    pub(crate) fn park(&self) {
        let mut stack = self.stack.lock().unwrap_or_else(|p| p.into_inner());
        let Some(s) = stack.as_mut().filter(|s| !s.parked) else {
            return;
        };
        // SAFETY: `s.usable` is the usable part of a live mapping this
        // module made (a dropped stack clears the slot under this lock
        // first); no frame on it is live (the caller's contract). MAP_FIXED
        // replaces exactly that range with fresh inaccessible memory.
        let r = unsafe {
            libc::mmap(
                s.usable.start as *mut libc::c_void,
                s.usable.len(),
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE | libc::MAP_FIXED,
                -1,
                0,
            )
        };
        if r == libc::MAP_FAILED {
            // Not parked: the pages stay, the stack stays usable.
            tracing::debug!(error = %std::io::Error::last_os_error(), "could not park a fiber stack");
            return;
        }
        s.parked = true;
    }

    /// Makes a parked stack usable again (zero-filled on touch); a no-op
    /// when it is not parked. `Err` when the kernel refuses (no mapping
    /// left): the call must not run.
    pub(crate) fn unpark(&self) -> std::io::Result<()> {
        let mut stack = self.stack.lock().unwrap_or_else(|p| p.into_inner());
        let Some(s) = stack.as_mut().filter(|s| s.parked) else {
            return Ok(());
        };
        // SAFETY: within a live mapping this module made (see `park`).
        let r = unsafe {
            libc::mprotect(
                s.usable.start as *mut libc::c_void,
                s.usable.len(),
                libc::PROT_READ | libc::PROT_WRITE,
            )
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error());
        }
        s.parked = false;
        Ok(())
    }
}

/// Makes fiber stacks (an inaccessible guard page below each) and registers
/// each with the slot current on the task that asked for it.
#[derive(Debug, Default)]
pub(crate) struct TrimmingStacks;

// SAFETY: every stack is a fresh private anonymous mapping, page aligned,
// zero filled, with a PROT_NONE guard page at its bottom; it lives until the
// `Stack` is dropped.
unsafe impl StackCreator for TrimmingStacks {
    fn new_stack(&self, size: usize, _zeroed: bool) -> wasmtime::Result<Box<dyn StackMemory>> {
        let page = page_size();
        let usable = size.div_ceil(page).max(1) * page;
        let len = usable + page;
        // SAFETY: a new anonymous mapping; nothing else refers to it.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(wasmtime::Error::msg(format!(
                "cannot map a {} KiB fiber stack: {}",
                len >> 10,
                std::io::Error::last_os_error()
            )));
        }
        let base = base as usize;
        // SAFETY: within the mapping just made.
        if unsafe {
            libc::mprotect(
                (base + page) as *mut libc::c_void,
                usable,
                libc::PROT_READ | libc::PROT_WRITE,
            )
        } != 0
        {
            let e = std::io::Error::last_os_error();
            // SAFETY: unmapping what was just mapped.
            unsafe { libc::munmap(base as *mut libc::c_void, len) };
            return Err(wasmtime::Error::msg(format!(
                "cannot map a fiber stack: {e}"
            )));
        }
        let slot = SLOT.try_with(Arc::clone).ok();
        if let Some(slot) = &slot {
            *slot.stack.lock().unwrap_or_else(|p| p.into_inner()) = Some(Parkable {
                usable: base + page..base + len,
                parked: false,
            });
        }
        Ok(Box::new(Stack {
            base,
            len,
            page,
            slot,
        }))
    }
}

/// One mapped stack.
struct Stack {
    base: usize,
    len: usize,
    page: usize,
    slot: Option<Arc<StackSlot>>,
}

// SAFETY: the mapping is valid until drop; top, range and guard describe it.
unsafe impl StackMemory for Stack {
    fn top(&self) -> *mut u8 {
        (self.base + self.len) as *mut u8
    }

    fn range(&self) -> Range<usize> {
        self.base + self.page..self.base + self.len
    }

    fn guard_range(&self) -> Range<*mut u8> {
        self.base as *mut u8..(self.base + self.page) as *mut u8
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Some(slot) = &self.slot {
            let mut stack = slot.stack.lock().unwrap_or_else(|p| p.into_inner());
            if stack.as_ref().is_some_and(|s| s.usable == self.range()) {
                *stack = None;
            }
        }
        // SAFETY: unmapping the mapping this stack made; nothing refers to
        // it any more (wasmtime drops a stack only when no fiber uses it).
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.len) };
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).unwrap_or(4096)
}
