//! Unknown flags given to `teamhost teammate`: a Claude Code lead passes
//! every flag its own teammates take (2.1.332 added `--lead-verify-key`,
//! `--effort`, `--setting-sources=`, `--plugin-dir`, … and writes any of
//! them as `--flag=value`), so a flag teamhost does not know must not stop
//! the teammate. Before clap parses, [`tolerate_unknown_flags`] drops each
//! unknown `--flag`, `--flag=value` or `--flag value` after the `teammate`
//! subcommand and says so on stderr. Other commands are left to clap.

use std::ffi::OsString;

use clap::CommandFactory;

/// The arguments with unknown `teammate` flags left out, and one warning
/// per flag left out. `teammate` takes no positional arguments, so a word
/// after an unknown `--flag` (not itself starting with `-`) is that flag's
/// value and goes with it; a value that starts with `-` comes as
/// `--flag=value`, as the reference writes it. Known flags (and their
/// aliases, and the global ones) are kept as they are; `--` ends the
/// screening.
pub fn tolerate_unknown_flags(args: Vec<OsString>) -> (Vec<OsString>, Vec<String>) {
    // Other commands pay nothing: the definition is built only for `teammate`.
    let Some(at) = subcommand_index(&args) else {
        return (args, Vec::new());
    };
    let mut cmd = super::Cli::command();
    cmd.build();
    let Some(sub) = cmd.find_subcommand("teammate") else {
        return (args, Vec::new());
    };
    let mut known: Vec<String> = vec!["help".into(), "version".into()];
    // The subcommand's own flags and the global ones (`--home`, `--store`, …).
    for arg in sub.get_arguments().chain(cmd.get_arguments()) {
        known.extend(arg.get_long().map(str::to_string));
        known.extend(
            arg.get_all_aliases()
                .unwrap_or_default()
                .into_iter()
                .map(str::to_string),
        );
    }
    let mut kept: Vec<OsString> = args[..=at].to_vec();
    let mut warnings = Vec::new();
    let mut rest = args[at + 1..].iter().peekable();
    while let Some(word) = rest.next() {
        let Some(text) = word.to_str() else {
            kept.push(word.clone());
            continue;
        };
        if text == "--" {
            kept.push(word.clone());
            kept.extend(rest.by_ref().cloned());
            break;
        }
        let Some(flag) = text.strip_prefix("--") else {
            kept.push(word.clone());
            continue;
        };
        let (name, inline_value) = match flag.split_once('=') {
            Some((n, _)) => (n, true),
            None => (flag, false),
        };
        if known.iter().any(|k| k == name) {
            kept.push(word.clone());
            continue;
        }
        let mut dropped = text.to_string();
        if !inline_value {
            if let Some(value) = rest.next_if(|v| v.to_str().is_some_and(|v| !v.starts_with('-'))) {
                dropped = format!("{text} {}", value.to_string_lossy());
            }
        }
        warnings.push(format!(
            "warning: teamhost teammate does not use {dropped}; ignored (a newer Claude Code lead may pass flags teamhost does not know)"
        ));
    }
    (kept, warnings)
}

/// Where `teammate` stands in `args`: the first word equal to it that is
/// not the value of a global flag before it.
fn subcommand_index(args: &[OsString]) -> Option<usize> {
    const GLOBAL_WITH_VALUE: [&str; 7] = [
        "--home",
        "--store",
        "--store-ca",
        "--store-cert",
        "--store-key",
        "--store-creds",
        "--store-nkey",
    ];
    let mut i = 1;
    while i < args.len() {
        let w = args[i].to_str()?;
        if w == "teammate" {
            return Some(i);
        }
        if !w.starts_with('-') {
            return None; // another subcommand
        }
        i += if GLOBAL_WITH_VALUE.contains(&w) { 2 } else { 1 };
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn os(words: &[&str]) -> Vec<OsString> {
        words.iter().map(OsString::from).collect()
    }

    const KEY: &str = "1795000000000.MCowBQYDK2VwAyEA11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo";

    /// The launch a 2.1.332 lead writes, in both forms, with flags teamhost
    /// does not use.
    #[test]
    fn a_2_1_332_launch_parses_in_both_forms_and_unknown_flags_are_dropped_with_a_warning() {
        let spaced = [
            "teamhost",
            "teammate",
            "--agent-id",
            "w@t",
            "--agent-name",
            "w",
            "--team-name",
            "t",
            "--agent-color",
            "blue",
            "--parent-session-id",
            "6f1c",
            "--lead-verify-key",
            KEY,
            "--plan-mode-required",
            "--agent-type",
            "reviewer",
            "--permission-mode",
            "plan",
            "--proactivity",
            "high",
            "--disallowed-tools",
            "Bash",
            "--tools",
            "Read,Edit",
            "--model",
            "m",
            "--effort",
            "max",
            "--setting-sources=",
            "--chrome",
            "--restricted",
            "--plugin-dir",
            "/p",
            "--strict-mcp-config",
        ];
        let (args, warnings) = tolerate_unknown_flags(os(&spaced));
        let cli = crate::cli::Cli::try_parse_from(&args).unwrap();
        let crate::cli::Command::Teammate(a) = cli.command else {
            panic!("not teammate")
        };
        assert_eq!(a.lead_verify_key.as_deref(), Some(KEY));
        assert_eq!(a.agent_color.as_deref(), Some("blue"));
        assert_eq!(a.how.permission_mode.as_deref(), Some("plan"));
        assert_eq!(a.how.disallowed_tools, ["Bash"]);
        let dropped = warnings.join("\n");
        for f in [
            "--proactivity high",
            "--tools Read,Edit",
            "--effort max",
            "--setting-sources=",
            "--chrome",
            "--restricted",
            "--plugin-dir /p",
            "--strict-mcp-config",
        ] {
            assert!(dropped.contains(f), "{f} not reported: {dropped}");
        }
        assert_eq!(warnings.len(), 8, "{dropped}");

        let joined = [
            "teamhost",
            "teammate",
            "--agent-id=w@t",
            &format!("--lead-verify-key={KEY}"),
            "--agent-color=-odd",
            "--model=m",
            "--effort=-1",
            "--plugin-url=https://x/y",
        ];
        let (args, warnings) = tolerate_unknown_flags(os(&joined));
        let cli = crate::cli::Cli::try_parse_from(&args).unwrap();
        let crate::cli::Command::Teammate(a) = cli.command else {
            panic!("not teammate")
        };
        assert_eq!(a.agent_id.as_deref(), Some("w@t"));
        assert_eq!(a.lead_verify_key.as_deref(), Some(KEY));
        assert_eq!(a.agent_color.as_deref(), Some("-odd"));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
    }

    #[test]
    fn other_commands_and_known_flags_are_left_to_clap() {
        let words = os(&["teamhost", "--home", "/h", "status", "--bogus"]);
        let (args, warnings) = tolerate_unknown_flags(words.clone());
        assert_eq!(args, words);
        assert!(warnings.is_empty());
        let words = os(&[
            "teamhost",
            "--home",
            "/h",
            "teammate",
            "--agent-id",
            "w@t",
            "--",
            "x",
        ]);
        assert_eq!(tolerate_unknown_flags(words.clone()).0, words);
    }
}
