//! Bash commands, split for matching: a [`Command`] is a command line cut
//! into parts (at `;`, `&&`, `||`, `|`, `&`, newlines and parentheses) and
//! words, with quoting removed the way a shell would, plus a cruder split
//! that deny rules also match. Also parses a Bash rule's specifier. What
//! the splits mean for allow and deny rules is in the `# Bash` section of the
//! [module docs](super).

use super::{RuleProblem, Specifier};

pub(super) fn parse_command_spec(spec: &str) -> Result<Specifier, RuleProblem> {
    let (body, prefix) = match spec.strip_suffix(":*") {
        Some(body) => (body, true),
        None => (spec, false),
    };
    if body.contains('*') {
        return Err(RuleProblem::BashWildcard);
    }
    let command = Command::parse(body);
    if command.opaque || command.parts.len() > 1 {
        return Err(RuleProblem::CompoundCommand);
    }
    let words = command.parts.into_iter().next().unwrap_or_default();
    if words.is_empty() {
        return Err(RuleProblem::EmptyCommandPrefix);
    }
    Ok(if prefix {
        Specifier::CommandPrefix(words)
    } else {
        Specifier::Command(words)
    })
}

/// A Bash command split for matching (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Command {
    /// Parts, each a list of words with quoting removed.
    pub(crate) parts: Vec<Vec<String>>,
    /// Parts from the crude split that ignores quoting (deny only).
    pub(super) loose: Vec<Vec<String>>,
    /// A substitution or an unclosed quote: what runs is not known.
    pub(crate) opaque: bool,
}

impl Command {
    pub(crate) fn parse(command: &str) -> Command {
        let (parts, opaque) = split_structured(command);
        Command {
            parts,
            loose: split_loose(command),
            opaque,
        }
    }
}

/// Splits at `;`, `&`, `|`, newlines and parentheses outside quotes; words at
/// whitespace; removes quotes and backslashes the way a shell would.
fn split_structured(command: &str) -> (Vec<Vec<String>>, bool) {
    struct Acc {
        parts: Vec<Vec<String>>,
        words: Vec<String>,
        word: String,
        in_word: bool,
    }
    impl Acc {
        fn end_word(&mut self) {
            if self.in_word {
                self.words.push(std::mem::take(&mut self.word));
                self.in_word = false;
            }
        }
        fn end_part(&mut self) {
            self.end_word();
            if !self.words.is_empty() {
                self.parts.push(std::mem::take(&mut self.words));
            }
        }
    }
    let chars: Vec<char> = command.chars().collect();
    let n = chars.len();
    let mut acc = Acc {
        parts: Vec::new(),
        words: Vec::new(),
        word: String::new(),
        in_word: false,
    };
    let mut opaque = false;
    let mut i = 0;
    while i < n {
        let c = chars[i];
        match c {
            '\\' => {
                if let Some(&next) = chars.get(i + 1) {
                    if next != '\n' {
                        acc.word.push(next);
                        acc.in_word = true;
                    }
                }
                i += 2;
                continue;
            }
            '\'' => {
                acc.in_word = true;
                match chars[i + 1..].iter().position(|&c| c == '\'') {
                    Some(len) => {
                        acc.word.extend(&chars[i + 1..i + 1 + len]);
                        i += len + 2;
                    }
                    None => {
                        opaque = true;
                        acc.word.extend(&chars[i + 1..]);
                        i = n;
                    }
                }
                continue;
            }
            '"' => {
                acc.in_word = true;
                i += 1;
                let mut closed = false;
                while i < n {
                    match chars[i] {
                        '"' => {
                            closed = true;
                            i += 1;
                            break;
                        }
                        '\\' if i + 1 < n && matches!(chars[i + 1], '"' | '\\' | '$' | '`') => {
                            acc.word.push(chars[i + 1]);
                            i += 2;
                        }
                        '`' => {
                            opaque = true;
                            acc.word.push('`');
                            i += 1;
                        }
                        '$' if chars.get(i + 1) == Some(&'(') => {
                            opaque = true;
                            acc.word.push('$');
                            i += 1;
                        }
                        other => {
                            acc.word.push(other);
                            i += 1;
                        }
                    }
                }
                opaque = opaque || !closed;
                continue;
            }
            '$' if chars.get(i + 1) == Some(&'(') => {
                opaque = true;
                acc.end_part();
                i += 2;
                continue;
            }
            '`' => {
                opaque = true;
                acc.end_part();
            }
            '(' => {
                if acc.in_word && (acc.word.ends_with('<') || acc.word.ends_with('>')) {
                    opaque = true;
                }
                acc.end_part();
            }
            '&' => {
                let redirect =
                    (i > 0 && matches!(chars[i - 1], '>' | '<')) || chars.get(i + 1) == Some(&'>');
                if redirect {
                    acc.word.push('&');
                    acc.in_word = true;
                } else {
                    acc.end_part();
                }
            }
            ';' | '|' | ')' | '\n' => acc.end_part(),
            c if c.is_whitespace() => acc.end_word(),
            c => {
                acc.word.push(c);
                acc.in_word = true;
            }
        }
        i += 1;
    }
    acc.end_part();
    (acc.parts, opaque)
}

/// The crude split for deny rules: quotes, `$` and backslashes count as
/// separators or vanish, so quoted and substituted commands surface as parts.
fn split_loose(command: &str) -> Vec<Vec<String>> {
    command
        .split(|c: char| ";&|()`\"'\n$".contains(c))
        .map(|part| {
            part.split_whitespace()
                .map(|w| w.replace('\\', ""))
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|words| !words.is_empty())
        .collect()
}

/// Programs that run the command after them as it is (after their own
/// options and, for `env`, assignments): a deny rule looks through them.
const PASS_THROUGH: &[&str] = &["command", "exec", "builtin", "nohup", "time", "env"];

/// A command part as a deny rule reads it: leading `NAME=value`
/// assignments and pass-through programs ([`PASS_THROUGH`], with their
/// dash options) dropped, and the program named by its file name, so that
/// `/bin/rm -f x`, `FOO=1 rm x`, `command rm x` and `env -i rm x` are the
/// `rm` a `Bash(rm:*)` deny rule names. Only deny rules (and approval
/// routes to a stricter decider) use it: an allow rule still matches the
/// words as written.
pub(super) fn program_form(part: &[String]) -> Vec<String> {
    let mut words = part;
    loop {
        let Some((first, rest)) = words.split_first() else {
            return Vec::new();
        };
        let is_assignment = first.split_once('=').is_some_and(|(name, _)| {
            !name.is_empty() && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
        });
        let program = first.rsplit('/').next().unwrap_or(first);
        if is_assignment {
            words = rest;
        } else if PASS_THROUGH.contains(&program) {
            let options = rest
                .iter()
                .take_while(|w| w.starts_with('-') || (program == "env" && w.contains('=')))
                .count();
            words = &rest[options..];
        } else {
            let mut out = Vec::with_capacity(words.len());
            out.push(program.to_string());
            out.extend(rest.iter().cloned());
            return out;
        }
    }
}

/// One word as a shell (and [`Command::parse`]) would read it back.
pub(crate) fn quote_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%".contains(c));
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Subject, ToolRules};
    use super::*;

    fn allows_command(rules: &[&str], command: &str) -> bool {
        let rules = ToolRules::new(rules, [""; 0]).unwrap();
        rules
            .allowing(&Subject::Command(&Command::parse(command)))
            .is_some()
    }

    fn denies_command(rules: &[&str], command: &str) -> bool {
        let rules = ToolRules::new([""; 0], rules).unwrap();
        rules
            .first_deny(&Subject::Command(&Command::parse(command)))
            .is_some()
    }

    /// A deny rule is not dodged by naming the program another
    /// way; an allow rule still covers only the words as written.
    #[test]
    fn a_deny_rule_catches_the_program_by_any_path_assignment_or_pass_through() {
        for command in [
            "rm -f x",
            "/bin/rm -f x",
            "/usr/bin/rm -f x",
            "./../../bin/rm x",
            "FOO=1 rm x",
            "command rm x",
            "exec /bin/rm x",
            "env -i A=b rm x",
            "nohup time rm x",
            "cd . && /bin/rm -f x",
        ] {
            assert!(denies_command(&["Bash(rm:*)"], command), "{command:?}");
        }
        for command in ["rmdir x", "echo rm", "ls /bin/rm", "FOO=rm ls"] {
            assert!(!denies_command(&["Bash(rm:*)"], command), "{command:?}");
        }
        assert!(denies_command(
            &["Bash(git push:*)"],
            "/usr/bin/git push origin"
        ));
        assert!(!allows_command(&["Bash(rm:*)"], "/bin/rm x"));
    }

    #[test]
    fn a_prefix_rule_matches_the_command_as_a_word() {
        assert!(allows_command(&["Bash(git:*)"], "git status"));
        assert!(allows_command(&["Bash(git:*)"], "git"));
        assert!(allows_command(&["Bash(git:*)"], "  git   log --oneline  "));
        assert!(!allows_command(&["Bash(git:*)"], "gitx status"));
        assert!(!allows_command(&["Bash(git:*)"], "echo git"));
        assert!(allows_command(
            &["Bash(npm run test:*)"],
            "npm run test -- --watch"
        ));
        assert!(!allows_command(&["Bash(npm run test:*)"], "npm run testx"));
        assert!(!allows_command(&["Bash(npm run test:*)"], "npm run"));
    }

    #[test]
    fn an_exact_rule_matches_only_that_command() {
        assert!(allows_command(&["Bash(npm test)"], "npm test"));
        assert!(allows_command(&["Bash(npm test)"], "npm  'test'"));
        assert!(!allows_command(&["Bash(npm test)"], "npm test --all"));
        assert!(!allows_command(&["Bash(npm test)"], "npm"));
        assert!(allows_command(&["Bash(echo 'a b')"], "echo \"a b\""));
        assert!(!allows_command(&["Bash(echo 'a b')"], "echo a b"));
    }

    #[test]
    fn a_compound_command_is_allowed_only_if_every_part_is() {
        assert!(!allows_command(&["Bash(git:*)"], "rm -rf /; git status"));
        assert!(!allows_command(&["Bash(git:*)"], "git status; rm -rf /"));
        assert!(!allows_command(&["Bash(git:*)"], "git status && rm -rf /"));
        assert!(!allows_command(&["Bash(git:*)"], "git status || rm -rf /"));
        assert!(!allows_command(&["Bash(git:*)"], "git log | sh"));
        assert!(!allows_command(&["Bash(git:*)"], "git log & rm x"));
        assert!(!allows_command(&["Bash(git:*)"], "git log\nrm x"));
        assert!(!allows_command(&["Bash(git:*)"], "(rm x)"));
        assert!(allows_command(
            &["Bash(git:*)"],
            "git add . && git commit -m 'a; b'"
        ));
        assert!(allows_command(
            &["Bash(git:*)", "Bash(npm test)"],
            "git pull && npm test"
        ));
        assert!(allows_command(&["Bash(cargo test:*)"], "cargo test 2>&1"));
        assert!(allows_command(
            &["Bash(cargo test:*)"],
            "cargo test &> out.txt"
        ));
    }

    #[test]
    fn a_substitution_or_unclosed_quote_matches_no_command_rule() {
        assert!(!allows_command(&["Bash(git:*)"], "git log $(rm -rf /)"));
        assert!(!allows_command(&["Bash(git:*)"], "git log `rm -rf /`"));
        assert!(!allows_command(&["Bash(git:*)"], "git log \"$(id)\""));
        assert!(!allows_command(
            &["Bash(git:*)"],
            "git diff <(cat /etc/passwd)"
        ));
        assert!(!allows_command(&["Bash(git:*)"], "git commit -m 'unclosed"));
        assert!(allows_command(
            &["Bash(git:*)"],
            "git commit -m '$(not run)'"
        ));
        // A bare Bash rule allows anything.
        assert!(allows_command(&["Bash"], "git log $(rm -rf /)"));
        assert!(!allows_command(&["Bash(git:*)"], ""));
    }

    #[test]
    fn a_deny_rule_matches_any_part_even_hidden_in_quotes_or_substitutions() {
        assert!(denies_command(&["Bash(rm:*)"], "rm -rf /"));
        assert!(denies_command(&["Bash(rm:*)"], "git status; rm -rf /"));
        assert!(denies_command(&["Bash(rm:*)"], "ls | rm x"));
        assert!(denies_command(&["Bash(rm:*)"], "echo $(rm -rf x)"));
        assert!(denies_command(&["Bash(rm:*)"], "echo \"$(rm -rf x)\""));
        assert!(denies_command(&["Bash(rm:*)"], "echo `rm x`"));
        assert!(denies_command(&["Bash(rm:*)"], "sh -c 'rm -rf x'"));
        assert!(denies_command(&["Bash(rm:*)"], "\"rm\" -rf x"));
        assert!(denies_command(&["Bash(rm:*)"], "\\rm -rf x"));
        assert!(denies_command(&["Bash"], "true"));
        assert!(!denies_command(&["Bash(rm:*)"], "rmdir x"));
        assert!(!denies_command(&["Bash(rm:*)"], "echo rm"));
    }

    #[test]
    fn words_are_quoted_back_so_they_parse_to_themselves() {
        for word in ["git", "a b", "it's", "$(x)", "", "src/*.rs"] {
            let quoted = quote_word(word);
            let parsed = Command::parse(&quoted);
            assert_eq!(parsed.parts, vec![vec![word.to_owned()]], "{quoted}");
        }
    }
}
