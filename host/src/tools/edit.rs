//! `Edit`: replace `old_string` by `new_string` in one file.
//!
//! Without `replace_all`, `old_string` must occur exactly once: zero is
//! [`ToolError::NotFound`], more is [`ToolError::Conflict`] naming how many
//! (add surrounding text to make it unique, or set `replace_all`). An empty
//! `old_string` (use Write to create a file) and `old_string == new_string`
//! are [`ToolError::Invalid`]. The file must be UTF-8 text of at most
//! `max_file_bytes`, and so must the result, which is checked before it is
//! built ([`ToolError::TooLarge`]); it is rewritten atomically, as Write
//! does. Host memory per call: the file, once, and the result, once.

use std::io::Read as _;

use crate::sandbox::EditInput;

use super::{show, DiskBudget, ToolBox, ToolError};

/// What Edit returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EditOutput {
    /// The file edited, relative to the capability directory.
    pub path: String,
    /// How many occurrences were replaced.
    pub replacements: usize,
}

impl ToolBox {
    /// Applies `input` to its file (see the module docs).
    pub fn edit(&self, input: &EditInput) -> Result<EditOutput, ToolError> {
        self.edit_within(input, None)
    }

    /// [`edit`](ToolBox::edit), refused with [`ToolError::TooLarge`] before
    /// anything is written when the directory would then break `budget`.
    pub fn edit_within(
        &self,
        input: &EditInput,
        budget: Option<&DiskBudget>,
    ) -> Result<EditOutput, ToolError> {
        let rel = self.relative(&input.file_path)?;
        let shown = show(&rel);
        if input.old_string.is_empty() {
            return Err(ToolError::Invalid(
                "old_string is empty; use Write to create or replace a whole file".to_owned(),
            ));
        }
        if input.old_string == input.new_string {
            return Err(ToolError::Invalid(
                "old_string and new_string are the same; nothing would change".to_owned(),
            ));
        }
        let file = self.open_regular("edit", &rel)?;
        let max = self.limits.max_file_bytes;
        let mut bytes = Vec::new();
        // One byte past the limit tells a file that is too big.
        file.take(max.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|e| ToolError::io("edit", &rel, e))?;
        if bytes.len() as u64 > max {
            return Err(ToolError::TooLarge(format!(
                "{shown} is bigger than the {max} bytes Edit rewrites; use Bash"
            )));
        }
        let text = String::from_utf8(bytes)
            .map_err(|_| ToolError::Invalid(format!("{shown} is not UTF-8 text")))?;

        let found = text.matches(input.old_string.as_str()).count();
        let replace_all = input.replace_all.unwrap_or(false);
        match found {
            0 => {
                return Err(ToolError::NotFound(format!(
                    "old_string was not found in {shown}"
                )))
            }
            1 => {}
            n if !replace_all => {
                return Err(ToolError::Conflict(format!(
                    "old_string occurs {n} times in {shown}; add surrounding text to make it \
                     unique, or set replace_all"
                )))
            }
            _ => {}
        }
        // The size is known before the text is built: many occurrences of a
        // short `old_string` times a long `new_string` must not make the host
        // allocate the result only to refuse it.
        let size = (text.len() as u128 - (found * input.old_string.len()) as u128)
            + found as u128 * input.new_string.len() as u128;
        if size > u128::from(self.limits.max_file_bytes) {
            return Err(ToolError::TooLarge(format!(
                "the edited {shown} would have {size} bytes, more than {}",
                self.limits.max_file_bytes
            )));
        }
        let edited = text.replace(input.old_string.as_str(), &input.new_string);
        if let Some(budget) = budget {
            self.check_disk(&rel, edited.len() as u64, budget)?;
        }
        let (path, _) = self.replace_file(&rel, edited.as_bytes())?;
        Ok(EditOutput {
            path: show(&path),
            replacements: found,
        })
    }
}
