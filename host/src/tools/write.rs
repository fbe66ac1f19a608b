//! `Write`: create or overwrite a file with the whole new content.
//!
//! Missing parent directories are created inside the capability directory.
//! The content goes to a temporary file beside the target, which is then
//! renamed over it, both through the [`Dir`](cap_std::fs::Dir): a reader
//! sees the old file or the new one, never half of one. An existing file
//! keeps its permissions, but never a set-uid or set-gid bit (the host may
//! run as root: new content in a set-uid-root file would be root's; see
//! [`super::setid`]). Only a regular file is replaced: a FIFO, socket or
//! device node at the path is refused. A symlink that resolves inside the directory is
//! written through (the link stays); one that leads out is refused. No
//! `fsync`: the rename is atomic against readers, not against a power cut.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use cap_std::fs::OpenOptions;

use crate::sandbox::WriteInput;

use super::{show, DiskBudget, ToolBox, ToolError};

/// What Write returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOutput {
    /// The file written, relative to the capability directory.
    pub path: String,
    /// Bytes written.
    pub bytes: u64,
    /// The file did not exist before.
    pub created: bool,
}

impl ToolBox {
    /// Writes `input.content` to `input.file_path` (see the module docs).
    pub fn write(&self, input: &WriteInput) -> Result<WriteOutput, ToolError> {
        self.write_within(input, None)
    }

    /// [`write`](ToolBox::write), refused with [`ToolError::TooLarge`]
    /// before anything is written when the directory would then break
    /// `budget`.
    pub fn write_within(
        &self,
        input: &WriteInput,
        budget: Option<&DiskBudget>,
    ) -> Result<WriteOutput, ToolError> {
        let rel = self.relative(&input.file_path)?;
        if input.content.len() as u64 > self.limits.max_file_bytes {
            return Err(ToolError::TooLarge(format!(
                "{} bytes is more than the {} a file may have",
                input.content.len(),
                self.limits.max_file_bytes
            )));
        }
        if let Some(budget) = budget {
            self.check_disk(&rel, input.content.len() as u64, budget)?;
        }
        let (path, created) = self.replace_file(&rel, input.content.as_bytes())?;
        Ok(WriteOutput {
            path: show(&path),
            bytes: input.content.len() as u64,
            created,
        })
    }

    /// Atomically replaces (or creates) the file at `rel` with `bytes`.
    /// Returns the path actually written (a symlink resolved) and whether
    /// it was created.
    pub(crate) fn replace_file(
        &self,
        rel: &Path,
        bytes: &[u8],
    ) -> Result<(PathBuf, bool), ToolError> {
        let Some(name) = rel.file_name() else {
            return Err(ToolError::Invalid(
                "the teammate's directory itself is not a file".to_owned(),
            ));
        };
        let dir = self.dir.get()?;
        let (target, existing) = match dir.symlink_metadata(rel) {
            Ok(meta) if meta.is_dir() => {
                return Err(ToolError::Invalid(format!("{} is a directory", show(rel))))
            }
            Ok(meta) if meta.is_symlink() => {
                let target = dir
                    .canonicalize(rel)
                    .map_err(|e| ToolError::io("resolve", rel, e))?;
                let meta = dir
                    .metadata(&target)
                    .map_err(|e| ToolError::io("resolve", rel, e))?;
                if meta.is_dir() {
                    return Err(ToolError::Invalid(format!("{} is a directory", show(rel))));
                }
                refuse_special(rel, &meta)?;
                (target, Some(meta))
            }
            Ok(meta) => {
                refuse_special(rel, &meta)?;
                (rel.to_path_buf(), Some(meta))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => (rel.to_path_buf(), None),
            Err(e) => return Err(ToolError::io("write", rel, e)),
        };
        let parent = target.parent().unwrap_or(Path::new(""));
        if !parent.as_os_str().is_empty() {
            dir.create_dir_all(parent)
                .map_err(|e| ToolError::io("create the directory", parent, e))?;
        }

        let tmp = parent.join(format!(
            ".{}.{:016x}.teamhost-tmp",
            name.to_string_lossy(),
            fastrand::u64(..)
        ));
        let written = (|| {
            let mut file = dir.open_with(&tmp, OpenOptions::new().write(true).create_new(true))?;
            file.write_all(bytes)?;
            if let Some(meta) = &existing {
                let mode = cap_std::fs::PermissionsExt::mode(&meta.permissions());
                file.set_permissions(cap_std::fs::PermissionsExt::from_mode(
                    mode & 0o7777 & !super::setid::SET_ID,
                ))?;
            }
            drop(file);
            dir.rename(&tmp, &dir, &target)
        })();
        if let Err(e) = written {
            let _ = dir.remove_file(&tmp);
            return Err(ToolError::io("write", &target, e));
        }
        Ok((target, existing.is_none()))
    }
}

/// Refuses to replace anything but a regular file (`meta`: what `rel` is).
fn refuse_special(rel: &Path, meta: &cap_std::fs::Metadata) -> Result<(), ToolError> {
    if meta.is_file() {
        return Ok(());
    }
    Err(ToolError::Invalid(format!(
        "{} is {}, not a regular file; Write replaces regular files only",
        show(rel),
        super::kind_of(meta)
    )))
}
