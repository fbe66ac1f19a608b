//! The one place host paths are taken out of text a teammate gets back:
//! every error message, denial reason and tool description crosses the WIT
//! boundary through [`Redactor::apply`].
//!
//! A teammate sees paths relative to its directory, as it spelled them. The
//! directory's absolute path (canonical, and as the host was given it)
//! becomes `.`; other host paths the host names (its home, with the plan
//! files, logs and task lists under it) become a `<label>`. Longer paths
//! are replaced first, so a path inside the directory is never half
//! rewritten by a shorter one it starts with. What the guest itself spelled
//! (a path argument, registered with [`Redactor::keep`]) is left as it
//! spelled it, where it stands whole: it tells the guest nothing new.

use std::borrow::Cow;
use std::path::Path;

use super::ToolBox;

/// Host paths to hide, and what each becomes.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// `(host path, replacement)`, longest path first.
    hidden: Vec<(String, String)>,
    /// Text the guest spelled, longest first.
    kept: Vec<String>,
}

impl Redactor {
    /// Hides `tools`' capability directory (both spellings) as `.`, and
    /// its ancestors as `..`, `../..`, … so a path the host resolved outside
    /// it reads as the guest would spell it (`../outside.txt`). Ancestors of
    /// a single component (`/tmp`, `/home`) are left alone: they name no one
    /// in particular, and a path the guest spelled there stays as it was.
    pub fn for_tools(tools: &ToolBox) -> Redactor {
        let mut r = Redactor::default();
        for dir in [&tools.root, &tools.given] {
            r = r.hide(dir, ".");
            let mut up = String::from("..");
            for ancestor in dir.ancestors().skip(1) {
                if ancestor.components().count() <= 2 {
                    break;
                }
                r = r.hide(ancestor, &up);
                up.push_str("/..");
            }
        }
        r
    }

    /// Also hides `path` (and its canonical form, when it has one) as
    /// `replacement`. The root `/` and empty paths are ignored.
    pub fn hide(mut self, path: &Path, replacement: &str) -> Redactor {
        let canonical = std::fs::canonicalize(path).ok();
        for p in std::iter::once(path).chain(canonical.as_deref()) {
            let text = p.to_string_lossy();
            let text = text.trim_end_matches('/');
            if text.is_empty() || self.hidden.iter().any(|(h, _)| h == text) {
                continue;
            }
            self.hidden.push((text.to_owned(), replacement.to_owned()));
        }
        self.hidden.sort_by_key(|(h, _)| std::cmp::Reverse(h.len()));
        self
    }

    /// Leaves `spelled`, text the guest itself wrote (a path it passed), as
    /// it is wherever it stands as a whole token in a text: the guest keeps
    /// the words it used. Only text with a `/` is kept (a bare name could
    /// shield parts of a host path); a token that merely starts a longer
    /// path is not whole, so it cannot shield the rest of it.
    pub fn keep(mut self, spelled: &str) -> Redactor {
        if spelled.len() >= 2 && spelled.contains('/') && !self.kept.iter().any(|k| k == spelled) {
            self.kept.push(spelled.to_owned());
            self.kept.sort_by_key(|k| std::cmp::Reverse(k.len()));
        }
        self
    }

    /// `text` with every hidden path replaced (only where it stands as a
    /// whole path: followed by `/`, the end, or a character that cannot
    /// continue a file name in prose, such as a space or a quote), except
    /// inside the tokens [`keep`](Redactor::keep) protects.
    pub fn apply<'a>(&self, text: &'a str) -> Cow<'a, str> {
        if self.kept.is_empty() || !self.kept.iter().any(|k| text.contains(k.as_str())) {
            return self.apply_plain(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut plain_from = 0;
        let mut at = 0;
        while at < text.len() {
            let starts_token = text[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !(c.is_alphanumeric() || "_-./".contains(c)));
            let kept = starts_token
                .then(|| {
                    self.kept.iter().find(|k| {
                        text[at..].starts_with(k.as_str()) && ends_a_token(&text[at + k.len()..])
                    })
                })
                .flatten();
            match kept {
                Some(k) => {
                    out.push_str(&self.apply_plain(&text[plain_from..at]));
                    out.push_str(k);
                    at += k.len();
                    plain_from = at;
                }
                None => at += text[at..].chars().next().map_or(1, char::len_utf8),
            }
        }
        out.push_str(&self.apply_plain(&text[plain_from..]));
        Cow::Owned(out)
    }

    /// [`apply`](Redactor::apply) without kept tokens.
    fn apply_plain<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out: Cow<'a, str> = Cow::Borrowed(text);
        for (path, with) in &self.hidden {
            if !out.contains(path.as_str()) {
                continue;
            }
            let mut result = String::with_capacity(out.len());
            let mut rest: &str = &out;
            while let Some(at) = rest.find(path.as_str()) {
                let after = &rest[at + path.len()..];
                let whole = ends_a_path(after);
                result.push_str(&rest[..at]);
                result.push_str(if whole { with } else { path });
                rest = after;
            }
            result.push_str(rest);
            out = Cow::Owned(result);
        }
        out
    }
}

/// Whether `after` (the text right after a match) leaves the match a whole
/// path: not continued by a name character (a `.` counts only when another
/// name character follows it, so a sentence may end with the path).
fn ends_a_path(after: &str) -> bool {
    let name = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let mut chars = after.chars();
    match chars.next() {
        None => true,
        Some('.') => !chars.next().is_some_and(|c| name(c) || c == '.'),
        Some(c) => !name(c),
    }
}

/// Whether `after` leaves a kept token whole: it ends a path, and not by
/// going on into a deeper one.
fn ends_a_token(after: &str) -> bool {
    ends_a_path(after) && !after.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redactor() -> Redactor {
        Redactor::default()
            .hide(Path::new("/work/team/cap"), ".")
            .hide(Path::new("/home/u/.teamhost"), "<teamhost home>")
    }

    #[test]
    fn the_directory_becomes_dot_and_the_home_a_label() {
        let r = redactor();
        assert_eq!(
            r.apply("/work/team/cap/src/a.rs: no such file"),
            "./src/a.rs: no such file"
        );
        assert_eq!(
            r.apply("outside the capability directory /work/team/cap (/etc/passwd)"),
            "outside the capability directory . (/etc/passwd)"
        );
        assert_eq!(
            r.apply("only the plan file /home/u/.teamhost/plans/a.md may change"),
            "only the plan file <teamhost home>/plans/a.md may change"
        );
    }

    #[test]
    fn a_sibling_that_only_starts_like_the_directory_is_left_alone() {
        let r = redactor();
        assert_eq!(r.apply("/work/team/cap2/x"), "/work/team/cap2/x");
        assert_eq!(r.apply("/work/team/cap.bak"), "/work/team/cap.bak");
        assert_eq!(r.apply("in /work/team/cap."), "in ..");
        assert_eq!(r.apply("nothing to hide"), "nothing to hide");
    }

    #[test]
    fn a_path_the_host_resolved_above_the_directory_reads_relative_to_it() {
        let tmp = tempfile::tempdir().unwrap();
        let cap = std::fs::canonicalize(tmp.path()).unwrap().join("team/cap");
        std::fs::create_dir_all(&cap).unwrap();
        let tools = ToolBox::open(&cap, super::super::ToolLimits::default()).unwrap();
        let r = Redactor::for_tools(&tools);
        let team = cap.parent().unwrap();
        let text = format!(
            "{}/x resolves to {}/outside.txt; {} is its parent; /tmp/y stays",
            cap.display(),
            team.display(),
            team.display()
        );
        assert_eq!(
            r.apply(&text),
            "./x resolves to ../outside.txt; .. is its parent; /tmp/y stays"
        );
    }

    #[test]
    fn a_path_the_guest_spelled_is_kept_but_cannot_shield_a_longer_one() {
        let r = redactor().keep("/work/team/other/x.txt").keep("/work");
        assert_eq!(
            r.apply("Write to `/work/team/other/x.txt` is outside /work/team/cap"),
            "Write to `/work/team/other/x.txt` is outside ."
        );
        // `/work` is followed by `/`: not a whole token, so no shield.
        assert_eq!(r.apply("`/work` and /work/team/cap/a"), "`/work` and ./a");
        // A bare name is never kept.
        let r = redactor().keep("cap");
        assert_eq!(r.apply("/work/team/cap"), ".");
    }

    #[test]
    fn the_canonical_spelling_is_hidden_too() {
        let dir = tempfile::tempdir().unwrap();
        let real = std::fs::canonicalize(dir.path()).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let r = Redactor::default().hide(&link, ".");
        let text = format!("{}/a and {}/b", link.display(), real.display());
        assert_eq!(r.apply(&text), "./a and ./b");
    }
}
