//! `teamhost new NAME [--lang rust|python|js] [DIR]`: a teammate project from
//! one of the templates shipped inside the binary (`host/build.rs` embeds
//! `templates/teammate*` and `wit/`), so it works without a clone of
//! teamhost. Writes the template and the WIT contract (`wit/`, with
//! `wit/deps`) into `DIR` (default `./NAME`), with NAME as the crate or
//! component, the team and the teammate. The project's `team.toml` has a
//! `build` command, so `cd DIR && teamhost run` builds the component, then
//! runs the scripted team against it.
//!
//! Nothing is overwritten: an existing non-empty `DIR` is refused before
//! anything is written. `scripts/new-teammate` in a clone calls this command.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Args, ValueEnum};
use serde::Serialize;

use super::Output;

/// The files of the templates and of `wit/`, as `host/build.rs` found them.
mod embedded {
    /// One file of a template: its path inside the template, its bytes, and
    /// whether it is a program (written with mode 0755, else 0644).
    pub struct EmbeddedFile {
        pub path: &'static str,
        pub bytes: &'static [u8],
        pub executable: bool,
    }
    include!(concat!(env!("OUT_DIR"), "/templates.rs"));
}

const EXAMPLES: &str = "Examples:
  teamhost new scribe                    # a Rust teammate in ./scribe
  teamhost new scribe --lang python      # Python (componentize-py)
  teamhost new scribe --lang js work/js  # JavaScript, in work/js
  cd scribe && teamhost run              # builds it, then runs its team.toml";

/// Arguments of `teamhost new`.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct NewArgs {
    /// The teammate's name: the crate (or component), the team and the
    /// teammate. Letters, digits, '-' and '_', starting with a letter.
    #[arg(value_name = "NAME")]
    name: String,
    /// Where to create it: a directory that does not exist or is empty
    /// (default: ./NAME).
    #[arg(value_name = "DIR")]
    dir: Option<PathBuf>,
    /// The language of the teammate.
    #[arg(long, value_enum, default_value_t = Lang::Rust)]
    lang: Lang,
}

/// The languages a template exists for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Lang {
    /// A Rust crate for wasm32-wasip2, built with cargo.
    Rust,
    /// app.py, built by componentize-py.
    Python,
    /// app.js, built by componentize-js.
    Js,
}

/// What `teamhost new` made (the `--json` document).
#[derive(Debug, Serialize)]
struct Created {
    dir: PathBuf,
    name: String,
    lang: Lang,
    component: String,
    files: usize,
    next: String,
}

/// Runs `teamhost new`.
pub fn new(out: &Output, a: NewArgs) -> anyhow::Result<()> {
    check_name(&a.name)?;
    let dir = a.dir.clone().unwrap_or_else(|| PathBuf::from(&a.name));
    check_dir(&dir)?;
    let (template, component) = match a.lang {
        Lang::Rust => (
            embedded::RUST,
            format!(
                "target/wasm32-wasip2/release/{}.wasm",
                a.name.replace('-', "_")
            ),
        ),
        Lang::Python => (embedded::PYTHON, format!("target/{}.wasm", a.name)),
        Lang::Js => (embedded::JS, format!("target/{}.wasm", a.name)),
    };
    let mut files = 0;
    for f in template {
        let bytes = personalise(f.path, f.bytes, &a.name, a.lang);
        write_file(&dir.join(f.path), &bytes, f.executable)?;
        files += 1;
    }
    for f in embedded::WIT {
        write_file(&dir.join("wit").join(f.path), f.bytes, f.executable)?;
        files += 1;
    }
    let shown = dir.display().to_string();
    let next = format!("cd {} && teamhost run", shell_word(&shown));
    let created = Created {
        dir: dir.clone(),
        name: a.name.clone(),
        lang: a.lang,
        component,
        files,
        next,
    };
    out.print(&created, || {
        let what = match a.lang {
            Lang::Rust => format!("crate {}", created.name),
            Lang::Python => format!("Python teammate {}", created.name),
            Lang::Js => format!("JavaScript teammate {}", created.name),
        };
        let mut text = format!(
            "created {shown} ({what}, component {})\nnext: {}   (builds it, then runs its team.toml)\n",
            created.component, created.next
        );
        match a.lang {
            Lang::Rust => {}
            Lang::Python => text.push_str(PYTHON_NOTE),
            Lang::Js => text.push_str(JS_NOTE),
        }
        text
    })
}

/// What a Python project's `./build` needs, and where it looks.
const PYTHON_NOTE: &str = "its ./build needs componentize-py: the toolchain of a teamhost clone \
(scripts/polyglot-toolchain there once; point TEAMHOST_POLYGLOT at its target/polyglot), or \
componentize-py on your PATH\n";

/// What a JavaScript project's `./build` needs: the clone's toolchain only
/// (it also generates the WIT's types with a script of that toolchain).
const JS_NOTE: &str = "its ./build needs the JavaScript toolchain of a teamhost clone (node, jco, \
componentize-js, tsc and its type generator): run scripts/polyglot-toolchain there once and \
point TEAMHOST_POLYGLOT at its target/polyglot\n";

/// The rules of a teammate's name in a manifest (see
/// [`crate::manifest`]), narrowed to what is also a crate, a team and a file
/// name: an ASCII letter, then letters, digits, `-` and `_`; not the lead's,
/// the host's, the person's nor one that looks like them.
fn check_name(name: &str) -> anyhow::Result<()> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        && name.len() <= 64;
    if !valid {
        anyhow::bail!(
            "{name:?} is not a valid teammate name: use up to 64 letters, digits, '-' and '_', starting with a letter (like `teamhost new scribe`)"
        );
    }
    // `user`, `system` and their look-alikes (`User`) too: the rule every
    // new member's name passes.
    crate::store::names::check_new_member_name(name)
        .map_err(|e| anyhow::anyhow!("{e} (like `teamhost new scribe`)"))
}

/// Refuses a `dir` that exists and is not an empty directory: nothing of
/// the person's may be overwritten.
fn check_dir(dir: &Path) -> anyhow::Result<()> {
    match std::fs::read_dir(dir) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                anyhow::bail!(
                    "{} already exists and is not empty: nothing was written; give another directory (`teamhost new NAME DIR`) or remove it first",
                    dir.display()
                );
            }
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(_) if dir.exists() => anyhow::bail!(
            "{} already exists and is not a directory: nothing was written; give another directory (`teamhost new NAME DIR`)",
            dir.display()
        ),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", dir.display())),
    }
}

/// The template file at `path` with the placeholder name `teammate` made
/// `name`, on the lines that carry it (as `scripts/new-teammate` did).
fn personalise(path: &str, bytes: &[u8], name: &str, lang: Lang) -> Vec<u8> {
    let placeholder = "name = \"teammate\"";
    let named = format!("name = \"{name}\"");
    let edit = |f: &dyn Fn(&str) -> String| -> Vec<u8> {
        let text = String::from_utf8_lossy(bytes);
        let mut out: Vec<String> = text.lines().map(f).collect();
        if text.ends_with('\n') {
            out.push(String::new());
        }
        out.join("\n").into_bytes()
    };
    match (path, lang) {
        ("team.toml", _) => edit(&|line: &str| {
            if line == placeholder {
                return named.clone();
            }
            let wasm = match lang {
                Lang::Rust => (
                    "release/teammate.wasm\"",
                    format!("release/{}.wasm\"", name.replace('-', "_")),
                ),
                _ => (
                    "\"target/teammate.wasm\"",
                    format!("\"target/{name}.wasm\""),
                ),
            };
            line.replace(wasm.0, &wasm.1)
        }),
        ("Cargo.toml" | "Cargo.lock", Lang::Rust) => edit(&|line: &str| {
            if line == placeholder {
                named.clone()
            } else {
                line.to_string()
            }
        }),
        ("build", Lang::Python | Lang::Js) => edit(&|line: &str| {
            if line == "name=teammate" {
                format!("name={name}")
            } else {
                line.replace("@POLYGLOT@", &polyglot_dir())
            }
        }),
        _ => bytes.to_vec(),
    }
}

/// The Python and JS toolchain of the clone this teamhost was built from
/// (`target/polyglot`, made by `scripts/polyglot-toolchain`) when it is
/// still there; else empty, and the project's `./build` looks in
/// `$TEAMHOST_POLYGLOT` (a Python one then on the PATH too).
fn polyglot_dir() -> String {
    let built_from = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/polyglot");
    match built_from.canonicalize() {
        Ok(dir) if dir.join("installed.stamp").is_file() => dir.display().to_string(),
        _ => String::new(),
    }
}

/// Writes `bytes` to `path`, making its directories; mode 0755 for a
/// program, else 0644.
fn write_file(path: &Path, bytes: &[u8], executable: bool) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot make {}", parent.display()))?;
    }
    std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    let mode = if executable { 0o755 } else { 0o644 };
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot set the mode of {}", path.display()))
}

/// `word` quoted for a POSIX shell when it needs it.
fn shell_word(word: &str) -> String {
    if word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
    {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', "'\\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_member_rules_and_keep_the_lead_and_host_names() {
        assert!(check_name("scribe").is_ok());
        assert!(check_name("my-scribe_2").is_ok());
        for bad in ["", "2scribe", "-x", "a b", "a/b", "a@b", "é"] {
            assert!(check_name(bad).is_err(), "{bad:?} accepted");
        }
        let e = check_name(crate::store::config::LEAD_NAME).unwrap_err();
        assert!(e.to_string().contains("reserved"), "{e}");
        for reserved in ["user", "User", "system", "teamhost"] {
            let e = check_name(reserved).unwrap_err();
            assert!(e.to_string().contains("reserved"), "{reserved}: {e}");
        }
    }

    #[test]
    fn the_rust_template_is_personalised_on_its_placeholder_lines_only() {
        let toml = "[team]\nname = \"teammate\"\n# name = \"teammate\" stays\ncomponent = \"target/wasm32-wasip2/release/teammate.wasm\"\n";
        let out = String::from_utf8(personalise(
            "team.toml",
            toml.as_bytes(),
            "my-bot",
            Lang::Rust,
        ))
        .unwrap();
        assert_eq!(
            out,
            "[team]\nname = \"my-bot\"\n# name = \"teammate\" stays\ncomponent = \"target/wasm32-wasip2/release/my_bot.wasm\"\n"
        );
    }

    #[test]
    fn every_template_is_embedded_with_its_manifest_and_the_wit_with_its_deps() {
        for t in [embedded::RUST, embedded::PYTHON, embedded::JS] {
            assert!(t.iter().any(|f| f.path == "team.toml"));
            assert!(t.iter().all(|f| !f.path.starts_with("target/")));
        }
        assert!(embedded::PYTHON
            .iter()
            .any(|f| f.path == "build" && f.executable));
        assert!(embedded::WIT.iter().any(|f| f.path == "world.wit"));
        assert!(embedded::WIT.iter().any(|f| f.path.starts_with("deps/")));
    }
}
