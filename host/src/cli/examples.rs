//! An example at the end of every command's `--help`, as cargo, docker and
//! spin show them: one table, by the command's path (`"team list"`),
//! attached to the parsed definition by [`attach`] (`Cli`'s
//! `mut_subcommands`). Each example line starts with `$ teamhost`; a test
//! parses every one of them with the real definition, so an example cannot
//! drift from the flags.

use clap::Command;

/// The examples of `teamhost --help`.
pub(super) const TOP: &str = "\
Examples:
  $ teamhost run team.toml             # run a team until its tasks are done
  $ teamhost ps                        # what runs on this machine
  $ teamhost logs -f demo              # follow its teammates' logs
  $ teamhost stop demo                 # stop the whole team
  $ teamhost help run                  # the manifest's format";

/// `(command path, example lines)`: a command missing here gets no
/// example, and the test fails.
const EXAMPLES: &[(&str, &[&str])] = &[
    ("team", &["teamhost team list"]),
    ("team create", &["teamhost team create demo --description \"Counts words\""]),
    ("team delete", &["teamhost team delete demo", "teamhost team delete demo --force --timeout 5"]),
    ("team list", &["teamhost team list --json"]),
    ("team add-member", &["teamhost team add-member demo alice --agent-type researcher"]),
    ("team remove-member", &["teamhost team remove-member demo alice"]),
    ("team show", &["teamhost team show demo"]),
    ("task", &["teamhost task list --team demo"]),
    ("task create", &["teamhost task create --team demo \"Count chapter one\""]),
    ("task list", &["teamhost task list --team demo --json"]),
    ("task get", &["teamhost task get --team demo 1"]),
    ("task update", &["teamhost task update --team demo 1 --status completed", "teamhost task update --team demo 2 --owner alice"]),
    ("task claim", &["teamhost task claim --team demo --agent alice 1"]),
    ("task delete", &["teamhost task delete --team demo 1"]),
    ("send", &["teamhost send --team demo alice \"Please also count chapter two\""]),
    ("broadcast", &["teamhost broadcast --team demo \"Stop after this task\""]),
    ("inbox", &["teamhost inbox --team demo team-lead", "teamhost inbox --team demo team-lead --take"]),
    ("status", &["teamhost status --team demo"]),
    ("watch", &["teamhost watch --team demo", "teamhost watch --team demo --lines"]),
    ("permit", &["teamhost permit --team demo REQUEST_ID --allow", "teamhost permit --team demo REQUEST_ID --deny --reason \"not in this directory\""]),
    ("plan", &["teamhost plan --team demo REQUEST_ID --approve", "teamhost plan --team demo REQUEST_ID --reject --feedback \"split it in two\""]),
    ("shutdown", &["teamhost shutdown --team demo alice --reason \"all done\""]),
    ("run", &["teamhost run team.toml", "teamhost run --keep team.toml", "teamhost run --resume team.toml"]),
    ("teammate", &["teamhost teammate --agent-id alice@demo --agent-name alice --team-name demo --component worker.wasm"]),
    ("store", &["teamhost --store nats://127.0.0.1:4222 store export --team demo --to ./demo-files"]),
    ("store export", &["teamhost --store nats://127.0.0.1:4222 store export --team demo --to ./demo-files"]),
    ("store import", &["teamhost --store nats://127.0.0.1:4222 store import --team demo --from ./demo-files"]),
    ("store info", &["teamhost --store nats://127.0.0.1:4222,127.0.0.1:4223,127.0.0.1:4224/demo store info"]),
    ("ps", &["teamhost ps", "teamhost ps -a --json"]),
    ("logs", &["teamhost logs demo", "teamhost logs --tail 20 demo", "teamhost logs --since 10m demo", "teamhost logs -f demo alice"]),
    ("stop", &["teamhost stop demo", "teamhost stop demo --timeout 10"]),
    ("check", &["teamhost check team.toml"]),
    ("doctor", &["teamhost doctor"]),
    ("completions", &["teamhost completions bash > ~/.local/share/bash-completion/completions/teamhost", "teamhost completions zsh > \"${fpath[1]}/_teamhost\"", "teamhost completions fish > ~/.config/fish/completions/teamhost.fish"]),
    ("man", &["teamhost man | man -l -", "teamhost man run | man -l -", "teamhost man --dir ~/.local/share/man/man1"]),
    ("schema", &["teamhost schema > teamhost-manifest.schema.json"]),
    ("new", &["teamhost new demo"]),
];

/// Gives `cmd` (a command directly under `teamhost`) and every command
/// under it its examples.
pub(super) fn attach(cmd: Command) -> Command {
    let path = cmd.get_name().to_string();
    with_examples(cmd, &path)
}

fn with_examples(mut cmd: Command, path: &str) -> Command {
    let names: Vec<String> = cmd
        .get_subcommands()
        .map(|s| s.get_name().to_string())
        .collect();
    for name in names {
        let sub = format!("{path} {name}");
        cmd = cmd.mut_subcommand(&name, |s| with_examples(s, &sub));
    }
    let Some(text) = text_for(path) else {
        return cmd;
    };
    // A command with a long help of its own (`run` shows the manifest's
    // format) keeps it, the examples after it.
    let long = cmd.get_after_long_help().map(|h| format!("{h}\n\n{text}"));
    let cmd = cmd.after_help(text.clone());
    match long {
        Some(l) => cmd.after_long_help(l),
        None => cmd,
    }
}

/// "Examples:" and the lines of `path`, if the table has them.
fn text_for(path: &str) -> Option<String> {
    let (_, lines) = EXAMPLES.iter().find(|(p, _)| *p == path)?;
    let mut text = String::from("Examples:");
    for l in *lines {
        text.push_str("\n  $ ");
        text.push_str(l);
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::super::Cli;

    /// The words of a shell line up to a redirection or a pipe, its
    /// quotes removed (enough for the examples above).
    fn words(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        let mut quote = None;
        let mut started = false;
        for c in line.chars() {
            match (quote, c) {
                (Some(q), c) if c == q => quote = None,
                (Some(_), c) => word.push(c),
                (None, '"' | '\'') => {
                    quote = Some(c);
                    started = true;
                }
                (None, '>' | '|' | '#') => break,
                (None, c) if c.is_whitespace() => {
                    if started || !word.is_empty() {
                        out.push(std::mem::take(&mut word));
                    }
                    started = false;
                }
                (None, c) => word.push(c),
            }
        }
        if started || !word.is_empty() {
            out.push(word);
        }
        out
    }

    /// Every command under `cmd` with its path, `cmd` included.
    fn walk(cmd: &clap::Command, path: String, out: &mut Vec<(String, clap::Command)>) {
        for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
            let p = format!("{path} {}", sub.get_name()).trim().to_string();
            walk(sub, p, out);
        }
        out.push((path, cmd.clone()));
    }

    #[test]
    fn every_commands_help_ends_with_examples_that_parse_as_that_command() {
        let mut all = Vec::new();
        walk(&Cli::definition(), String::new(), &mut all);
        assert!(all.len() > 30, "{} commands", all.len());
        for (path, mut cmd) in all {
            let help = cmd.render_long_help().to_string();
            let examples: Vec<&str> = help
                .lines()
                .skip_while(|l| *l != "Examples:")
                .filter_map(|l| l.trim().strip_prefix("$ "))
                .collect();
            assert!(
                !examples.is_empty(),
                "`teamhost {path} --help` shows no example:\n{help}"
            );
            let short = cmd.render_help().to_string();
            assert!(short.contains("Examples:"), "`teamhost {path} -h`: {short}");
            for line in examples {
                let args = words(line);
                assert_eq!(args[0], "teamhost", "{line}");
                // `teamhost help run` parses as a request for help.
                match Cli::try_parse_from(&args) {
                    Err(e) if e.kind() != clap::error::ErrorKind::DisplayHelp => {
                        panic!("the example `{line}` of `teamhost {path}` does not parse: {e}")
                    }
                    _ => {}
                }
                // It runs the command it illustrates.
                let said: Vec<&str> = args[1..]
                    .iter()
                    .map(String::as_str)
                    .filter(|a| !a.starts_with('-'))
                    .collect();
                let wanted: Vec<&str> = path.split(' ').filter(|w| !w.is_empty()).collect();
                if !wanted.is_empty() && !line.contains("--store") {
                    assert_eq!(
                        &said[..wanted.len()],
                        &wanted[..],
                        "the example `{line}` is under `teamhost {path}`"
                    );
                }
            }
        }
    }

    #[test]
    fn store_options_show_only_under_commands_that_open_a_store() {
        let mut root = Cli::definition();
        let help = |root: &mut clap::Command, name: &str| {
            root.find_subcommand_mut(name)
                .unwrap()
                .render_long_help()
                .to_string()
        };
        for name in super::super::NO_STORE {
            let text = help(&mut root, name);
            assert!(
                !text.contains("--store"),
                "`teamhost {name} --help`:\n{text}"
            );
        }
        for name in ["run", "status", "teammate", "task"] {
            let text = help(&mut root, name);
            for flag in ["--store <URL>", "--store-ca", "--store-creds"] {
                assert!(text.contains(flag), "`teamhost {name} --help` lost {flag}");
            }
        }
        assert!(root
            .render_long_help()
            .to_string()
            .contains("--store <URL>"));
        // Hidden, still global: a store given anywhere parses.
        let parsed = Cli::definition().try_get_matches_from([
            "teamhost",
            "new",
            "--store",
            "nats://h:1",
            "demo",
        ]);
        assert!(parsed.is_ok(), "{parsed:?}");
    }

    #[test]
    fn the_word_splitter_keeps_quoted_words_and_stops_at_a_redirection() {
        assert_eq!(
            words("teamhost send --team d a \"two words\" > f"),
            ["teamhost", "send", "--team", "d", "a", "two words"]
        );
        assert_eq!(words("teamhost x ''"), ["teamhost", "x", ""]);
    }
}
