//! The guest's own opens: `wasi:filesystem/types` `[method]descriptor.open-at`
//! shadowed by one that never makes a host thread wait on a special file,
//! and never hands out a set-id file to write.
//!
//! wasmtime-wasi opens what the guest names on a blocking-pool thread with
//! a plain `open()`: a FIFO in the guest's directory holds that thread until
//! a writer comes (for ever), the turn fails at its wall limit, and the
//! runtime cannot shut down while the thread waits. A device node's `open`
//! can do things, and a socket file cannot be opened at all. This open, in
//! place of wasmtime-wasi's, with the same flags, permissions and results
//! otherwise:
//!
//! | step | why |
//! |---|---|
//! | look at the target first (through the same sandboxed resolution, following a final symlink only when the guest's path flags say so): a FIFO, socket, character or block device is refused (`not-permitted`) unopened | a device's `open` is never run |
//! | open it `O_NONBLOCK` (and `O_NOCTTY`), then look again on the open descriptor: anything but a regular file or a directory is closed and refused | a special file swapped in between the look and the open cannot hold the thread either: the check that counts is on what was opened, not on the name |
//! | clear `O_NONBLOCK` on what is kept | regular files and directories ignore it; what the guest gets is what wasmtime-wasi would have given |
//! | a set-uid or set-gid regular file opened to write: its bits are cleared first (one name), or the open is refused (`not-permitted`, a hard link) | the host may run as root with `CAP_FSETID`, so the kernel would keep the bits through its writes: the guest would be writing a set-uid-root program ([`crate::tools::setid`]) |
//!
//! The guest cannot make a special file itself (WASI has no `mknod`), and
//! Bash cannot either ([`crate::tools::confine`]); what this guards against
//! is one that is there anyway (the user's, or a kernel that lets Bash).
//!
//! Registered right after wasmtime-wasi in [`super::engine`]; the shadowing
//! is checked: were the function not defined under [`TYPES`] (a newer
//! wasmtime-wasi), the linker would refuse to build.

use std::future::Future;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

use cap_primitives::fs::{FollowSymlinks, OpenOptions, OpenOptionsExt};
use wasmtime::component::{Linker, Resource};
use wasmtime::StoreContextMut;
use wasmtime_wasi::filesystem::{Descriptor, Dir, File};
use wasmtime_wasi::p2::bindings::filesystem::types::{
    DescriptorFlags, ErrorCode, OpenFlags, PathFlags,
};
use wasmtime_wasi::{OpenMode, WasiView};

/// The interface as wasmtime-wasi 48 registers it (components importing an
/// older 0.2 version are linked to it).
pub const TYPES: &str = "wasi:filesystem/types@0.2.12";

/// The function shadowed.
const OPEN_AT: &str = "[method]descriptor.open-at";

type Params = (
    Resource<Descriptor>,
    PathFlags,
    String,
    OpenFlags,
    DescriptorFlags,
);
type Return = (Result<Resource<Descriptor>, ErrorCode>,);

/// Puts the guarded `open-at` in place of wasmtime-wasi's, which must be in
/// `linker` already. `created` is called after each open that asked to
/// create the file and succeeded (the file may have been there already).
pub fn add_to_linker<T: WasiView + 'static>(
    linker: &mut Linker<T>,
    created: fn(&mut T),
) -> anyhow::Result<()> {
    // Defined without shadowing first: that must fail, because wasmtime-wasi
    // defined the name. Should it succeed, nothing is shadowed and guests
    // would reach the unguarded open through another name.
    if linker
        .instance(TYPES)?
        .func_wrap_async(OPEN_AT, guarded(created))
        .is_ok()
    {
        anyhow::bail!(
            "{TYPES} {OPEN_AT} was not defined by wasmtime-wasi: the guard on the guest's opens \
             (runtime/open_guard.rs) must name the interface wasmtime-wasi registers"
        );
    }
    linker.allow_shadowing(true);
    let shadowed = linker
        .instance(TYPES)
        .and_then(|mut i| i.func_wrap_async(OPEN_AT, guarded(created)));
    linker.allow_shadowing(false);
    shadowed.map_err(anyhow::Error::from)
}

/// The guarded `open-at`, calling `created` after a creating open.
fn guarded<T: WasiView + 'static>(
    created: fn(&mut T),
) -> impl for<'a> Fn(
    StoreContextMut<'a, T>,
    Params,
) -> Box<dyn Future<Output = wasmtime::Result<Return>> + Send + 'a>
       + Send
       + Sync
       + 'static {
    move |store, params| open_at::<T>(store, params, created)
}

fn open_at<T: WasiView>(
    mut store: StoreContextMut<'_, T>,
    (fd, path_flags, path, oflags, flags): Params,
    created: fn(&mut T),
) -> Box<dyn Future<Output = wasmtime::Result<Return>> + Send + '_> {
    let creates = oflags.contains(OpenFlags::CREATE);
    Box::new(async move {
        let dir = match store.data_mut().ctx().table.get(&fd)? {
            Descriptor::Dir(d) => d.clone(),
            Descriptor::File(_) => return Ok((Err(ErrorCode::NotDirectory),)),
        };
        let opened = match open(dir, path_flags, path, oflags, flags).await? {
            Ok(d) => d,
            Err(e) => return Ok((Err(e),)),
        };
        if creates {
            created(store.data_mut());
        }
        let fd = store.data_mut().ctx().table.push(opened)?;
        Ok((Ok(fd),))
    })
}

/// wasmtime-wasi's `open_at` (wasmtime-wasi 48, `filesystem.rs`), with the
/// checks of the module docs. The outer `Err` is a trap.
async fn open(
    dir: Dir,
    path_flags: PathFlags,
    path: String,
    oflags: OpenFlags,
    flags: DescriptorFlags,
) -> wasmtime::Result<Result<Descriptor, ErrorCode>> {
    let mut create = false;
    let mut open_mode = OpenMode::empty();
    let mut opts = OpenOptions::new();
    if oflags.contains(OpenFlags::CREATE) {
        if oflags.contains(OpenFlags::EXCLUSIVE) {
            opts.create_new(true);
        } else {
            opts.create(true);
        }
        create = true;
        opts.write(true);
        open_mode |= OpenMode::WRITE;
    }
    if oflags.contains(OpenFlags::TRUNCATE) {
        opts.truncate(true).write(true);
        open_mode |= OpenMode::WRITE;
    }
    if flags.contains(DescriptorFlags::READ) {
        opts.read(true);
        open_mode |= OpenMode::READ;
    }
    if flags.contains(DescriptorFlags::WRITE) {
        opts.write(true);
        open_mode |= OpenMode::WRITE;
    } else {
        opts.read(true);
        open_mode |= OpenMode::READ;
    }
    let follow = if path_flags.contains(PathFlags::SYMLINK_FOLLOW) {
        FollowSymlinks::Yes
    } else {
        FollowSymlinks::No
    };
    opts._cap_fs_ext_follow(follow)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    if flags.contains(DescriptorFlags::FILE_INTEGRITY_SYNC)
        || flags.contains(DescriptorFlags::DATA_INTEGRITY_SYNC)
        || flags.contains(DescriptorFlags::REQUESTED_WRITE_SYNC)
    {
        return Ok(Err(ErrorCode::Unsupported));
    }
    if oflags.contains(OpenFlags::DIRECTORY)
        && (oflags.contains(OpenFlags::CREATE)
            || oflags.contains(OpenFlags::EXCLUSIVE)
            || oflags.contains(OpenFlags::TRUNCATE))
    {
        return Ok(Err(ErrorCode::Invalid));
    }
    if dir.perms.write_not_permitted() && (create || open_mode.contains(OpenMode::WRITE)) {
        return Ok(Err(ErrorCode::NotPermitted));
    }
    let writes = open_mode.contains(OpenMode::WRITE);
    let start = dir.dir.clone();
    let opened = tokio::task::spawn_blocking(move || {
        open_blocking(&start, Path::new(&path), follow, &opts, writes)
    })
    .await
    .map_err(|e| wasmtime::Error::msg(format!("the guest's open failed on the host: {e}")))?;
    let (file, is_dir) = match opened {
        Ok(o) => o,
        Err(e) => return Ok(Err(e)),
    };
    // The descriptors wasmtime-wasi makes for this store: its WASI context
    // never allows blocking the current thread (runtime/instance.rs).
    if is_dir {
        Ok(Ok(Descriptor::Dir(Dir::new(
            file, dir.perms, open_mode, false,
        ))))
    } else if oflags.contains(OpenFlags::DIRECTORY) {
        Ok(Err(ErrorCode::NotDirectory))
    } else {
        Ok(Ok(Descriptor::File(File::new(
            file, dir.perms, open_mode, false,
        ))))
    }
}

/// Is this a FIFO, socket or device node?
fn special(t: std::fs::FileType) -> bool {
    t.is_fifo() || t.is_socket() || t.is_char_device() || t.is_block_device()
}

/// The blocking part of [`open`]: look, open without blocking, look again,
/// clear a set-id bit before a write. `(file, is a directory)`.
fn open_blocking(
    start: &std::fs::File,
    path: &Path,
    follow: FollowSymlinks,
    opts: &OpenOptions,
    writes: bool,
) -> Result<(std::fs::File, bool), ErrorCode> {
    let refused = |what: &str| {
        tracing::debug!("refused a guest's open of {}: {what}", path.display());
        ErrorCode::NotPermitted
    };
    // Missing (a create) or unreachable: the open says which.
    if let Ok(meta) = cap_primitives::fs::stat(start, path, follow) {
        use cap_primitives::fs::FileTypeExt as _;
        let t = meta.file_type();
        if t.is_fifo() || t.is_socket() || t.is_char_device() || t.is_block_device() {
            return Err(refused("a special file"));
        }
    }
    // What was opened is what counts: `special` again, on the descriptor.
    let file = cap_primitives::fs::open(start, path, opts).map_err(ErrorCode::from)?;
    let meta = file.metadata().map_err(ErrorCode::from)?;
    if special(meta.file_type()) {
        return Err(refused("a special file swapped in"));
    }
    // SAFETY: fcntl on a descriptor owned here.
    unsafe {
        let fd = file.as_raw_fd();
        let fl = libc::fcntl(fd, libc::F_GETFL);
        if fl < 0 || libc::fcntl(fd, libc::F_SETFL, fl & !libc::O_NONBLOCK) < 0 {
            return Err(ErrorCode::from(std::io::Error::last_os_error()));
        }
    }
    let set_id = crate::tools::setid::SET_ID;
    if writes && meta.is_file() && meta.mode() & set_id != 0 {
        if meta.nlink() > 1 {
            return Err(refused("a hard-linked set-id file, to write"));
        }
        let mode = meta.mode() & 0o7777 & !set_id;
        // SAFETY: fchmod on a descriptor owned here.
        if unsafe { libc::fchmod(file.as_raw_fd(), mode) } != 0 {
            return Err(refused("a set-id file whose bits cannot be cleared"));
        }
        tracing::warn!(
            "cleared the set-uid/set-gid bits of {} before a guest wrote to it",
            path.display()
        );
    }
    let is_dir = meta.is_dir();
    Ok((file, is_dir))
}
