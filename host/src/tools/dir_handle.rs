//! The capability directory's descriptor: held while a teammate works, let
//! go while it idles. A thousand idle teammates would otherwise hold a
//! thousand descriptors for nothing (and ten thousand would pass the usual
//! limit of descriptors per process).
//!
//! The directory is opened at spawn and its identity (device, inode)
//! recorded. When the descriptor was let go, the next tool call opens the
//! same canonical path again and refuses it unless it is still that
//! directory: a directory swapped in at the path since (which only someone
//! with access outside the teammate's directory can do) is never used.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

use super::ToolError;

/// The capability directory, opened on demand.
#[derive(Debug)]
pub(crate) struct DirHandle {
    /// Canonical path.
    root: PathBuf,
    /// Device and inode of the directory opened at spawn.
    identity: (u64, u64),
    open: Mutex<Option<Arc<Dir>>>,
}

impl DirHandle {
    /// Opens `root` (canonical) and records what it is.
    pub(crate) fn open(root: &Path) -> Result<DirHandle, ToolError> {
        let dir = open(root)?;
        let meta = std::fs::metadata(root).map_err(|e| ToolError::io("inspect", root, e))?;
        Ok(DirHandle {
            root: root.to_path_buf(),
            identity: (meta.dev(), meta.ino()),
            open: Mutex::new(Some(Arc::new(dir))),
        })
    }

    /// The directory's descriptor: the one held, or the same directory
    /// opened again.
    pub(crate) fn get(&self) -> Result<Arc<Dir>, ToolError> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = open.as_ref() {
            return Ok(dir.clone());
        }
        let dir = open_checked(&self.root, self.identity)?;
        let dir = Arc::new(dir);
        *open = Some(dir.clone());
        Ok(dir)
    }

    /// Lets the descriptor go (a call in flight keeps its own until done).
    pub(crate) fn release(&self) {
        *self.open.lock().unwrap_or_else(|p| p.into_inner()) = None;
    }
}

fn open(root: &Path) -> Result<Dir, ToolError> {
    Dir::open_ambient_dir(root, ambient_authority()).map_err(|e| ToolError::Io {
        context: format!("open the capability directory {}", root.display()),
        source: e,
    })
}

/// Opens `root` again and checks it is still the directory of `identity`.
fn open_checked(root: &Path, identity: (u64, u64)) -> Result<Dir, ToolError> {
    let dir = open(root)?;
    let meta = dir
        .dir_metadata()
        .map_err(|e| ToolError::io("inspect", root, e))?;
    let now = (
        cap_std::fs::MetadataExt::dev(&meta),
        cap_std::fs::MetadataExt::ino(&meta),
    );
    if now != identity {
        return Err(ToolError::Denied(
            "the teammate's directory was replaced since it started; its tools refuse to work \
             anywhere else"
                .to_owned(),
        ));
    }
    Ok(dir)
}
