//! The guest's own WASI file writes, counted against its tree's disk
//! budget ([`DiskMeter`]) before they happen, so a turn cannot write past
//! `disk_bytes` and be caught only when it ends.
//!
//! Four `wasi:filesystem/types` functions are shadowed in the linker
//! ([`add_to_linker`]); each wrapper counts and then calls wasmtime-wasi's
//! own implementation:
//!
//! | function | counted |
//! |---|---|
//! | `descriptor.write` | what the write adds past the file's end |
//! | `descriptor.set-size` | what the new size adds past the file's end |
//! | `descriptor.write-via-stream`, `append-via-stream` | the stream is wrapped ([`Counted`]): each `write`, `blocking-write-and-flush`, `write-zeroes` and `splice` into it counts what it adds past the file's end (all of it when appending) |
//!
//! Every other way a guest writes bytes into a file goes through one of
//! these (wasi-libc's `write`, `pwrite`, `ftruncate`, std's `File`). A write
//! that does not fit is refused with `insufficient-space` (a stream's last operation
//! fails with it) after a fresh measurement, and the lead is told
//! (once, until the tree has room again).
//!
//! Entries made without bytes are not refused here; they are noted, so the
//! turn's end knows whether it must walk the tree
//! ([`DiskMeter::needs_measure`]): a created file is counted as an entry
//! (by the guarded `open-at`, [`super::open_guard`], through
//! [`note_created`]), and `create-directory-at`, `symlink-at` and `link-at`
//! (a hard link shows its file's bytes twice to a walk) are shadowed here to
//! mark the tree changed unseen: the measurement after the turn counts them
//! (`disk_walk_entries`, `disk_bytes`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use wasmtime::component::{Linker, Resource};
use wasmtime::StoreContextMut;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::filesystem::types::{ErrorCode, HostDescriptor, PathFlags};
use wasmtime_wasi::p2::{DynOutputStream, OutputStream, Pollable, StreamError, StreamResult};

use super::disk_meter::DiskMeter;
use super::state::TeammateState;

/// The instance the functions are shadowed in (the version wasmtime-wasi
/// defines; the linker serves every 0.2.x import from it).
const INTERFACE: &str = "wasi:filesystem/types@0.2.12";

type Fd = Resource<Descriptor>;

/// Shadows the four writing functions of `wasi:filesystem/types` (defined
/// already by `wasmtime_wasi::p2::add_to_linker_async`) with counting ones.
pub(crate) fn add_to_linker(linker: &mut Linker<TeammateState>) -> anyhow::Result<()> {
    linker.allow_shadowing(true);
    let mut types = linker.instance(INTERFACE)?;
    types.func_wrap_async(
        "[method]descriptor.write",
        |mut store: StoreContextMut<'_, TeammateState>, (fd, buf, offset): (Fd, Vec<u8>, u64)| {
            Box::new(async move {
                let growth = match growth_at(store.data_mut(), &fd, offset, buf.len() as u64) {
                    Ok(g) => g,
                    Err(e) => return Ok((Err(e),)),
                };
                if let Err(e) = grow(store.data_mut(), growth).await {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = match HostDescriptor::write(&mut view, fd, buf, offset).await {
                    Ok(n) => Ok(n),
                    Err(e) => Err(e.downcast()?),
                };
                Ok((r,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.set-size",
        |mut store: StoreContextMut<'_, TeammateState>, (fd, size): (Fd, u64)| {
            Box::new(async move {
                let growth = match growth_at(store.data_mut(), &fd, size, 0) {
                    Ok(g) => g,
                    Err(e) => return Ok((Err(e),)),
                };
                if let Err(e) = grow(store.data_mut(), growth).await {
                    return Ok((Err(e),));
                }
                let mut view = store.data_mut().filesystem();
                let r = match HostDescriptor::set_size(&mut view, fd, size).await {
                    Ok(()) => Ok(()),
                    Err(e) => Err(e.downcast()?),
                };
                Ok((r,))
            })
        },
    )?;
    types.func_wrap(
        "[method]descriptor.write-via-stream",
        |mut store: StoreContextMut<'_, TeammateState>, (fd, offset): (Fd, u64)| {
            Ok((wrap_stream(store.data_mut(), fd, Some(offset))?,))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.append-via-stream",
        |mut store: StoreContextMut<'_, TeammateState>, (fd,): (Fd,)| {
            Ok((wrap_stream(store.data_mut(), fd, None)?,))
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.create-directory-at",
        |mut store: StoreContextMut<'_, TeammateState>, (fd, path): (Fd, String)| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::create_directory_at(&mut view, fd, path).await;
                if r.is_ok() {
                    made_unseen(store.data_mut());
                }
                Ok((fs_answer(r)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.symlink-at",
        |mut store: StoreContextMut<'_, TeammateState>, (fd, old, new): (Fd, String, String)| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::symlink_at(&mut view, fd, old, new).await;
                if r.is_ok() {
                    made_unseen(store.data_mut());
                }
                Ok((fs_answer(r)?,))
            })
        },
    )?;
    types.func_wrap_async(
        "[method]descriptor.link-at",
        |mut store: StoreContextMut<'_, TeammateState>,
         (fd, flags, old, to, new): (Fd, PathFlags, String, Fd, String)| {
            Box::new(async move {
                let mut view = store.data_mut().filesystem();
                let r = HostDescriptor::link_at(&mut view, fd, flags, old, to, new).await;
                if r.is_ok() {
                    made_unseen(store.data_mut());
                }
                Ok((fs_answer(r)?,))
            })
        },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// A file the guest's `open-at` created: one more entry for the tree's
/// count ([`DiskMeter::note_entry`]).
pub(crate) fn note_created(state: &mut TeammateState) {
    state.agent.fixed.budget.disk().note_entry();
}

/// wasmtime-wasi's answer as the guest gets it: an error code, or a trap.
fn fs_answer(r: wasmtime_wasi::p2::FsResult<()>) -> wasmtime::Result<Result<(), ErrorCode>> {
    match r {
        Ok(()) => Ok(Ok(())),
        Err(e) => Ok(Err(e.downcast()?)),
    }
}

/// The guest made a directory or a link: the turn's end measures the tree
/// ([`DiskMeter::note_unseen`]). A refused call made nothing (a
/// `create_dir_all` of a directory that is there asks every time).
fn made_unseen(state: &mut TeammateState) {
    state.agent.fixed.budget.disk().note_unseen();
}

/// The open file behind `fd`; `bad-descriptor` for a directory.
fn file_of(state: &mut TeammateState, fd: &Fd) -> Result<Arc<std::fs::File>, ErrorCode> {
    match state.table.get(fd) {
        Ok(Descriptor::File(f)) => Ok(f.file.clone()),
        // As wasmtime-wasi answers a file operation on a directory.
        Ok(Descriptor::Dir(_)) | Err(_) => Err(ErrorCode::BadDescriptor),
    }
}

/// What writing `len` bytes at `offset` (or making the file `offset` long,
/// with `len` 0) adds past the end of `fd`'s file.
fn growth_at(state: &mut TeammateState, fd: &Fd, offset: u64, len: u64) -> Result<u64, ErrorCode> {
    let file = file_of(state, fd)?;
    let size = file.metadata().map_err(|e| ErrorCode::from(&e))?.len();
    Ok(offset.saturating_add(len).saturating_sub(size))
}

/// Counts `growth` against the tree's disk budget; `insufficient-space` when it does
/// not fit (the lead told).
async fn grow(state: &mut TeammateState, growth: u64) -> Result<(), ErrorCode> {
    if growth == 0 {
        return Ok(());
    }
    let meter = state.agent.fixed.budget.disk().clone();
    match meter.grow(growth).await {
        Ok(()) => Ok(()),
        Err(why) => {
            Teller::of(state).tell(why);
            Err(ErrorCode::InsufficientSpace)
        }
    }
}

/// Calls wasmtime-wasi's `write-via-stream` (`offset` given) or
/// `append-via-stream` and puts the stream it made in a [`Counted`].
fn wrap_stream(
    state: &mut TeammateState,
    fd: Fd,
    offset: Option<u64>,
) -> wasmtime::Result<Result<Resource<DynOutputStream>, ErrorCode>> {
    let file = match file_of(state, &fd) {
        Ok(f) => f,
        Err(e) => return Ok(Err(e)),
    };
    let teller = Teller::of(state);
    let made = {
        let mut view = state.filesystem();
        match offset {
            Some(at) => HostDescriptor::write_via_stream(&mut view, fd, at),
            None => HostDescriptor::append_via_stream(&mut view, fd),
        }
    };
    let stream = match made {
        Ok(s) => s,
        Err(e) => return Ok(Err(e.downcast()?)),
    };
    let inner: DynOutputStream = state.table.delete(stream)?;
    let counted: DynOutputStream = Box::new(Counted {
        inner,
        file,
        at: offset,
        teller,
        measure: false,
        full: None,
    });
    Ok(Ok(state.table.push(counted)?))
}

/// Tells the lead (once, until the tree has room again) that a write was
/// refused.
#[derive(Clone)]
struct Teller {
    meter: Arc<DiskMeter>,
    team: crate::store::Team,
    lead: String,
    who: String,
    told: Arc<AtomicBool>,
}

impl Teller {
    fn of(state: &TeammateState) -> Teller {
        let fixed = &state.agent.fixed;
        Teller {
            meter: fixed.budget.disk().clone(),
            team: state.agent.team.store.clone(),
            lead: fixed.lead.clone(),
            who: fixed.identity.name.clone(),
            told: fixed.budget.disk().told(),
        }
    }

    fn tell(&self, why: String) {
        if self.told.swap(true, Ordering::SeqCst) {
            return;
        }
        let (team, lead) = (self.team.clone(), self.lead.clone());
        let text = format!(
            "{}: a write to its directory was refused: {why}; the write failed with `insufficient-space`",
            self.who
        );
        tracing::warn!(teammate = %self.who, "{text}");
        let send = move || {
            let msg = crate::store::OutgoingMessage::new(crate::protocol::HOST_SENDER, text);
            let _ = team.deliver(&lead, msg);
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => drop(rt.spawn_blocking(send)),
            Err(_) => send(),
        }
    }

    fn room_again(&self) {
        self.told.store(false, Ordering::SeqCst);
    }
}

/// A file output stream whose writes are counted first.
struct Counted {
    inner: DynOutputStream,
    file: Arc<std::fs::File>,
    /// Where the next write lands (`None`: appending).
    at: Option<u64>,
    teller: Teller,
    /// A write did not fit: measure again when the guest waits.
    measure: bool,
    /// Measured and still full: the refusal every later call returns.
    full: Option<String>,
}

/// A stream's refusal: `last-operation-failed` with an ENOSPC error
/// (`filesystem-error-code` gives `insufficient-space`; wasi-libc's
/// `write` reports it as EIO). The reason goes to the lead ([`Teller`]).
fn no_space(_why: &str) -> StreamError {
    StreamError::LastOperationFailed(wasmtime::Error::new(std::io::Error::from_raw_os_error(
        libc::ENOSPC,
    )))
}

impl Counted {
    /// What `len` bytes written now add past the file's end.
    fn growth(&self, len: u64) -> u64 {
        match self.at {
            None => len,
            Some(at) => {
                let size = self.file.metadata().map(|m| m.len()).unwrap_or(0);
                at.saturating_add(len).saturating_sub(size)
            }
        }
    }

    /// Of `len` bytes, how many fit now (the part that overwrites, and as
    /// much growth as the meter has room for).
    fn fits(&self, len: usize) -> usize {
        let room = self.teller.meter.room();
        match self.at {
            None => len.min(room.try_into().unwrap_or(usize::MAX)),
            Some(at) => {
                let size = self.file.metadata().map(|m| m.len()).unwrap_or(0);
                let inside = size.saturating_sub(at);
                len.min(inside.saturating_add(room).try_into().unwrap_or(usize::MAX))
            }
        }
    }

    fn advance(&mut self, len: usize) {
        if let Some(at) = &mut self.at {
            *at += len as u64;
        }
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Counted {
    async fn ready(&mut self) {
        self.inner.ready().await;
        if std::mem::take(&mut self.measure) {
            let usage = self.teller.meter.measure().await;
            let breach = self.teller.meter.budget().breach(&usage);
            if breach.is_some() || self.teller.meter.room() == 0 {
                let why = breach.unwrap_or_else(|| self.teller.meter.refusal(1));
                self.teller.tell(why.clone());
                self.full = Some(why);
            } else {
                self.teller.room_again();
            }
        }
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Counted {
    fn write(&mut self, bytes: Bytes) -> StreamResult<()> {
        let growth = self.growth(bytes.len() as u64);
        if !self.teller.meter.try_grow(growth) {
            let why = self.teller.meter.refusal(growth);
            self.teller.tell(why.clone());
            return Err(no_space(&why));
        }
        let len = bytes.len();
        self.inner.write(bytes)?;
        self.advance(len);
        Ok(())
    }

    fn flush(&mut self) -> StreamResult<()> {
        self.inner.flush()
    }

    fn check_write(&mut self) -> StreamResult<usize> {
        if let Some(why) = &self.full {
            return Err(no_space(why));
        }
        let n = self.inner.check_write()?;
        if n == 0 {
            return Ok(0);
        }
        let fits = self.fits(n);
        if fits == 0 {
            // Wait (the guest polls) for a fresh measurement.
            self.measure = true;
        }
        Ok(fits)
    }

    async fn blocking_write_and_flush(&mut self, bytes: Bytes) -> StreamResult<()> {
        if let Some(why) = &self.full {
            return Err(no_space(why));
        }
        let growth = self.growth(bytes.len() as u64);
        if let Err(why) = self.teller.meter.grow(growth).await {
            self.teller.tell(why.clone());
            return Err(no_space(&why));
        }
        let len = bytes.len();
        self.inner.blocking_write_and_flush(bytes).await?;
        self.advance(len);
        Ok(())
    }

    async fn cancel(&mut self) {
        self.inner.cancel().await
    }
}
