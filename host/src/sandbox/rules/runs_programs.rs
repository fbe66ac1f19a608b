//! Commands that run other programs: [`runs_programs`] says, for one simple
//! command (one part of a parsed [`Command`](super::Command)), whether it can
//! run a program other than itself through its own arguments, and names the
//! option that does. The engine uses it so that a prefix or exact allow rule
//! (`Bash(git:*)`, `Bash(find . -name x)`) does not pre-approve a command
//! that runs something the rule does not name: such a call asks the lead
//! (or is denied where the mode cannot ask). Deny rules and a bare `Bash`
//! rule are not affected.
//!
//! # The table
//!
//! The command is recognised by its first word's file name (`/usr/bin/env`
//! is `env`).
//!
//! | command | runs another program when |
//! |---|---|
//! | `env`, `nice`, `nohup`, `time`, `timeout`, `stdbuf`, `ionice`, `command`, `builtin` | it has an operand (the command to run); `env NAME=value` alone only prints |
//! | `xargs`, `sudo`, `su`, `doas`, `pkexec`, `runuser`, `chroot`, `setsid`, `flock`, `watch`, `parallel`, `exec`, `eval`, `source`, `.`, `chrt`, `taskset`, `unshare`, `nsenter`, `strace`, `ltrace`, `valgrind`, `script`, `expect`, `systemd-run`, `sg`, `firejail`, `bwrap` | always: running a command is what they do |
//! | `sh`, `bash`, `dash`, `zsh`, `ksh`, `mksh`, `ash`, `fish`, `csh`, `tcsh`, `busybox` | always: `-c`, a script, or commands on stdin |
//! | `python*`, `pypy*` | `-c` (inline code) |
//! | `perl` | `-e`, `-E` (also inside `-ne`, `-pe`, …) |
//! | `ruby`, `lua`, `Rscript` | `-e` |
//! | `node`, `nodejs`, `bun` | `-e`, `--eval`, `-p`, `--print` |
//! | `php` | `-r` |
//! | `awk`, `gawk`, `mawk`, `nawk` | the program uses `system`, a pipe (`\|`) or `@load`, or comes from a file (`-f`, `-E`) |
//! | `sed`, `gsed` | the script has an `e` command or an `s///e` flag, or comes from a file (`-f`) |
//! | `find` | `-exec`, `-execdir`, `-ok`, `-okdir` |
//! | `git` | see below |
//! | `tar` | `--to-command`, `--use-compress-program`, `-I`, `--checkpoint-action`, `--info-script`, `--new-volume-script`, `-F`, `--rsh-command` |
//! | `rsync` | `-e`, `--rsh`, `--rsync-path`, or a `host:path` operand (runs ssh) |
//! | `ssh`, `scp`, `sftp`, `rsh` | always: remote commands, `ProxyCommand`, `LocalCommand` |
//! | `zip` | `-T`, `-TT`, `--test`, `--unzip-command` |
//! | `less`, `more`, `most`, `pg`, `man` | always: shell escapes, input preprocessors, pagers |
//! | `vi`, `vim`, `nvim`, `view`, `vimdiff`, `ex`, `ed`, `emacs`, `nano`, `pico`, `joe`, `mg` | always: shell escapes |
//!
//! `git` runs another program when it has, before the subcommand, `-c`,
//! `--config-env`, `--exec-path=…`, `-p` or `--paginate`; anywhere,
//! `--upload-pack`, `--receive-pack`, `--exec`, `--ext-diff`, `--template`
//! or an `ext::` URL; or when the subcommand is `difftool`, `mergetool`,
//! `filter-branch`, `instaweb`, `send-email`, `citool`, `gui`, `web--browse`,
//! `help`, `credential` or any name that is not a built-in git command (it
//! may be an alias the teammate defined in its repository's config). Per
//! subcommand: `-u` on `clone`, `fetch`, `pull`, `ls-remote` and `archive`
//! (the upload-pack program; `push -u` only sets the upstream); `-c` or
//! `--config` on `clone`; `rebase` with `-x`, `--exec`, `-i` or
//! `--interactive`; `bisect run`; `submodule foreach`; `grep -O` or
//! `--open-files-in-pager`; `config` that edits (`-e`, `--edit`) or names a
//! key that holds a program (`alias.*`, `core.*`, `pager.*`, `filter.*`,
//! `credential.*`, `include.*`, `includeIf.*`, `sequence.editor`,
//! `gpg.program`, keys ending in `.command`, `.cmd`, `.textconv`,
//! `.program`, `.helper`, `.editor`, `.sshcommand`, `.uploadpack`,
//! `.receivepack`, `.proxy`), unless it only reads (`--get`, `--get-all`,
//! `--get-regexp`, `-l`, `--list`, `get`, `list`); `commit` without a message
//! (`-m`, `-F`, `-C`, `--fixup`, `--no-edit`) or with `-e`; `merge` without
//! `-m`, `-F`, `--no-edit`, `--ff-only`, `--abort` or `--quit`; an annotated
//! or signed `tag` (`-a`, `-s`, `-u`) without `-m` or `-F` (each opens the
//! editor, which the repository's config chooses).
//!
//! # What is not parsed
//!
//! A teammate's configuration **files** are not read: hooks in its `.git`,
//! filters, diff drivers and aliases in its `.git/config`, a `Makefile`,
//! `package.json` scripts, a `build.rs`. A rule that allows `git commit`,
//! `make` or `npm test` allows what those files say, as in the reference.
//! Such programs run inside Bash's own kernel confinement (the capability
//! directory, no network where the host enforces it), which is the boundary
//! that holds; this table only keeps a rule from covering more than its
//! author could read in it. It is deliberately conservative: a false
//! "runs another program" costs one question to the lead.

/// Why one simple command can run another program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RunsPrograms {
    /// What does it, as the teammate would write it (`git -c`, `find -exec`).
    pub(crate) what: String,
    /// How, in a few words.
    pub(crate) how: &'static str,
}

impl RunsPrograms {
    fn new(what: impl Into<String>, how: &'static str) -> Option<RunsPrograms> {
        Some(RunsPrograms {
            what: what.into(),
            how,
        })
    }
}

const RUN_OPERAND: &[&str] = &[
    "env", "nice", "nohup", "time", "timeout", "stdbuf", "ionice", "command", "builtin",
];
const RUN_ALWAYS: &[&str] = &[
    "xargs",
    "sudo",
    "su",
    "doas",
    "pkexec",
    "runuser",
    "chroot",
    "setsid",
    "flock",
    "watch",
    "parallel",
    "exec",
    "eval",
    "source",
    ".",
    "chrt",
    "taskset",
    "unshare",
    "nsenter",
    "strace",
    "ltrace",
    "valgrind",
    "script",
    "expect",
    "systemd-run",
    "sg",
    "firejail",
    "bwrap",
];
const SHELLS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "busybox",
];
const REMOTE: &[&str] = &["ssh", "scp", "sftp", "rsh"];
const PAGERS: &[&str] = &["less", "more", "most", "pg", "man"];
const EDITORS: &[&str] = &[
    "vi", "vim", "nvim", "view", "vimdiff", "ex", "ed", "emacs", "nano", "pico", "joe", "mg",
];

/// Does this simple command (its words, quoting removed) run another
/// program through its own arguments? `None` when the table above has no
/// row for it, or its row does not apply.
pub(crate) fn runs_programs(words: &[String]) -> Option<RunsPrograms> {
    let first = words.first()?;
    let name = first.rsplit('/').next().unwrap_or(first);
    let args = &words[1..];
    if RUN_OPERAND.contains(&name) {
        let operand = args
            .iter()
            .any(|a| !(a.starts_with('-') || (name == "env" && a.contains('='))));
        return operand
            .then(|| RunsPrograms::new(name, "runs the command it is given"))
            .flatten();
    }
    if RUN_ALWAYS.contains(&name) {
        return RunsPrograms::new(name, "runs the command it is given");
    }
    if SHELLS.contains(&name) {
        return RunsPrograms::new(name, "is a shell: it runs whatever commands it is given");
    }
    if REMOTE.contains(&name) {
        return RunsPrograms::new(name, "runs remote and proxy commands");
    }
    if PAGERS.contains(&name) {
        return RunsPrograms::new(name, "has shell escapes and input preprocessors");
    }
    if EDITORS.contains(&name) {
        return RunsPrograms::new(name, "has shell escapes");
    }
    if name.starts_with("python") || name.starts_with("pypy") {
        return inline_code(name, args, &["-c"], 'c', "");
    }
    match name {
        "perl" => inline_code(name, args, &["-e", "-E"], 'e', "E"),
        "ruby" | "lua" | "Rscript" => inline_code(name, args, &["-e"], 'e', ""),
        "node" | "nodejs" | "bun" => {
            inline_code(name, args, &["-e", "--eval", "-p", "--print"], 'e', "p")
        }
        "php" => inline_code(name, args, &["-r"], 'r', ""),
        "awk" | "gawk" | "mawk" | "nawk" => awk(name, args),
        "sed" | "gsed" => sed(name, args),
        "find" => args
            .iter()
            .find(|a| matches!(a.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir"))
            .and_then(|a| RunsPrograms::new(format!("find {a}"), "runs a command per file")),
        "git" => git(args),
        "tar" => tar(args),
        "rsync" => rsync(args),
        "zip" => args
            .iter()
            .find(|a| {
                a.starts_with("--unzip-command")
                    || a.as_str() == "--test"
                    || short_cluster_has(a, "T")
            })
            .and_then(|a| RunsPrograms::new(format!("zip {a}"), "runs an unzip command")),
        _ => None,
    }
}

/// `-x` or `-abx` (a cluster of short options) with one of `letters`.
fn short_cluster_has(arg: &str, letters: &str) -> bool {
    arg.len() > 1
        && arg.starts_with('-')
        && !arg.starts_with("--")
        && arg[1..].chars().any(|c| letters.contains(c))
}

fn inline_code(
    name: &str,
    args: &[String],
    options: &[&str],
    short: char,
    more_short: &str,
) -> Option<RunsPrograms> {
    let letters = format!("{short}{more_short}");
    for arg in args {
        if !arg.starts_with('-') {
            // The script (or the first operand): options after it are its own.
            return None;
        }
        let long = arg.split('=').next().unwrap_or(arg);
        if options.contains(&long) || short_cluster_has(arg, &letters) {
            return RunsPrograms::new(format!("{name} {arg}"), "runs inline code");
        }
    }
    None
}

fn awk(name: &str, args: &[String]) -> Option<RunsPrograms> {
    for arg in args {
        if matches!(arg.as_str(), "-f" | "-E" | "--file" | "--exec")
            || arg.starts_with("--file=")
            || arg.starts_with("--exec=")
        {
            return RunsPrograms::new(format!("{name} {arg}"), "runs a program file");
        }
        if arg.contains("system") || arg.contains('|') || arg.contains("@load") {
            return RunsPrograms::new(
                format!("{name} system()/|"),
                "runs commands from its program",
            );
        }
    }
    None
}

fn sed(name: &str, args: &[String]) -> Option<RunsPrograms> {
    let mut scripts: Vec<&str> = Vec::new();
    let mut explicit = false;
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if matches!(arg, "-f" | "--file") || arg.starts_with("--file=") {
            return RunsPrograms::new(format!("{name} {arg}"), "runs a script file");
        }
        if matches!(arg, "-e" | "--expression") {
            explicit = true;
            if let Some(s) = args.get(i + 1) {
                scripts.push(s);
            }
            i += 2;
            continue;
        }
        if let Some(s) = arg.strip_prefix("--expression=") {
            explicit = true;
            scripts.push(s);
        } else if !arg.starts_with('-') && !explicit && scripts.is_empty() {
            scripts.push(arg);
        }
        i += 1;
    }
    scripts
        .iter()
        .any(|s| sed_script_runs(s))
        .then(|| RunsPrograms::new(format!("{name} e"), "runs commands from its script"))
        .flatten()
}

/// A sed script with an `e` command or an `s` command with the `e` flag.
fn sed_script_runs(script: &str) -> bool {
    script.split([';', '\n', '{', '}']).any(|cmd| {
        let cmd = cmd.trim_start();
        // Skip an address: line numbers, `$`, `/re/`, `,`, `!`, `~`, spaces.
        let mut rest = cmd;
        loop {
            rest = rest.trim_start_matches(|c: char| {
                c.is_ascii_digit() || matches!(c, '$' | ',' | '!' | '~' | ' ' | '+')
            });
            if let Some(after) = rest.strip_prefix('/') {
                match after.find('/') {
                    Some(end) => rest = &after[end + 1..],
                    None => return false,
                }
            } else {
                break;
            }
        }
        if rest.starts_with('e') {
            return true;
        }
        let Some(body) = rest.strip_prefix('s') else {
            return false;
        };
        let Some(delim) = body.chars().next() else {
            return false;
        };
        // s<d>regex<d>replacement<d>flags
        let parts: Vec<&str> = body[delim.len_utf8()..].splitn(3, delim).collect();
        parts.get(2).is_some_and(|flags| flags.contains('e'))
    })
}

/// Built-in git subcommands that run no other program by their own
/// arguments (beyond the rows in the module table).
const GIT_BUILTINS: &[&str] = &[
    "add",
    "am",
    "annotate",
    "apply",
    "archive",
    "bisect",
    "blame",
    "branch",
    "bundle",
    "cat-file",
    "check-attr",
    "check-ignore",
    "check-mailmap",
    "check-ref-format",
    "checkout",
    "checkout-index",
    "cherry",
    "cherry-pick",
    "clean",
    "clone",
    "column",
    "commit",
    "commit-graph",
    "commit-tree",
    "config",
    "count-objects",
    "describe",
    "diff",
    "diff-files",
    "diff-index",
    "diff-tree",
    "fetch",
    "fetch-pack",
    "fmt-merge-msg",
    "for-each-ref",
    "format-patch",
    "fsck",
    "gc",
    "grep",
    "hash-object",
    "init",
    "interpret-trailers",
    "log",
    "ls-files",
    "ls-remote",
    "ls-tree",
    "mailinfo",
    "mailsplit",
    "merge",
    "merge-base",
    "merge-file",
    "merge-tree",
    "mktag",
    "mktree",
    "mv",
    "name-rev",
    "notes",
    "pack-objects",
    "prune",
    "pull",
    "push",
    "range-diff",
    "read-tree",
    "rebase",
    "reflog",
    "remote",
    "repack",
    "replace",
    "rerere",
    "reset",
    "restore",
    "rev-list",
    "rev-parse",
    "revert",
    "rm",
    "shortlog",
    "show",
    "show-branch",
    "show-ref",
    "sparse-checkout",
    "stash",
    "status",
    "submodule",
    "switch",
    "symbolic-ref",
    "tag",
    "update-index",
    "update-ref",
    "verify-commit",
    "verify-tag",
    "version",
    "whatchanged",
    "worktree",
    "write-tree",
];

/// Git subcommands that exist to run another program.
const GIT_RUNNERS: &[&str] = &[
    "difftool",
    "mergetool",
    "filter-branch",
    "instaweb",
    "send-email",
    "citool",
    "gui",
    "web--browse",
    "help",
    "credential",
];

fn git(args: &[String]) -> Option<RunsPrograms> {
    let found = |what: String, how| RunsPrograms::new(what, how);
    // Global options, up to the subcommand.
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        if !arg.starts_with('-') {
            break;
        }
        if arg == "-c"
            || arg.starts_with("--config-env")
            || (arg.starts_with("-c") && arg.len() > 2)
        {
            return found(
                format!("git {arg}"),
                "sets configuration that can name a program",
            );
        }
        if arg.starts_with("--exec-path=") || arg == "-p" || arg == "--paginate" {
            return found(format!("git {arg}"), "runs a program of its choosing");
        }
        // Options that take a separate value.
        if matches!(arg, "-C" | "--git-dir" | "--work-tree" | "--namespace") {
            i += 1;
        }
        i += 1;
    }
    let sub = args.get(i).map(String::as_str);
    // Options that name a program, before or after the subcommand.
    for arg in args {
        let long = arg.split('=').next().unwrap_or(arg);
        let what = |w: &str| match sub {
            Some(sub) => format!("git {sub} {w}"),
            None => format!("git {w}"),
        };
        if matches!(
            long,
            "--upload-pack" | "--receive-pack" | "--exec" | "--ext-diff" | "--template"
        ) {
            return found(what(long), "runs a program it names");
        }
        if arg.starts_with("ext::") {
            return found(what("ext::"), "runs the transport command it names");
        }
    }
    // `git`, `git --version`: prints.
    let sub = sub?;
    let rest = &args[i + 1..];
    if GIT_RUNNERS.contains(&sub) {
        return found(format!("git {sub}"), "runs another program");
    }
    if !GIT_BUILTINS.contains(&sub) {
        return found(
            format!("git {sub}"),
            "is not a built-in git command: it may be an alias, which can run any program",
        );
    }
    let has = |opts: &[&str]| {
        rest.iter()
            .find(|a| opts.contains(&a.split('=').next().unwrap_or(a)))
    };
    let opt = |a: &String| found(format!("git {sub} {a}"), "runs a program it names");
    match sub {
        "clone" | "fetch" | "pull" | "ls-remote" | "archive" => {
            if let Some(a) = has(&["-u"]) {
                return opt(a);
            }
            if sub == "clone" {
                if let Some(a) = has(&["-c", "--config"]) {
                    return found(
                        format!("git clone {a}"),
                        "sets configuration that can name a program",
                    );
                }
            }
            None
        }
        "rebase" => {
            if let Some(a) = has(&["-x", "--exec"]) {
                return opt(a);
            }
            has(&["-i", "--interactive"]).and_then(|a| {
                found(
                    format!("git rebase {a}"),
                    "opens the editor the config names",
                )
            })
        }
        "bisect" if rest.first().is_some_and(|a| a == "run") => {
            found("git bisect run".into(), "runs the command it is given")
        }
        "submodule" if rest.iter().any(|a| a == "foreach") => found(
            "git submodule foreach".into(),
            "runs the command it is given",
        ),
        "grep" => rest
            .iter()
            .find(|a| a.starts_with("-O") || a.starts_with("--open-files-in-pager"))
            .and_then(|a| found(format!("git grep {a}"), "runs a pager it names")),
        "config" => git_config(rest),
        "commit" => {
            let edit = has(&["-e", "--edit"]).is_some();
            let message = rest.iter().any(|a| {
                matches!(
                    a.split('=').next().unwrap_or(a),
                    "--message" | "--file" | "--reuse-message" | "--fixup" | "--no-edit"
                ) || short_cluster_has(a, "mFC")
            });
            (edit || !message)
                .then(|| {
                    found(
                        "git commit".into(),
                        "opens the editor the config names (no -m)",
                    )
                })
                .flatten()
        }
        "merge" => {
            let quiet = rest.iter().any(|a| {
                matches!(
                    a.split('=').next().unwrap_or(a),
                    "-m" | "--message"
                        | "-F"
                        | "--file"
                        | "--no-edit"
                        | "--ff-only"
                        | "--abort"
                        | "--quit"
                )
            });
            (!quiet)
                .then(|| {
                    found(
                        "git merge".into(),
                        "opens the editor the config names (no -m)",
                    )
                })
                .flatten()
        }
        "tag" => {
            let annotated = rest.iter().any(|a| {
                matches!(
                    a.split('=').next().unwrap_or(a),
                    "--annotate" | "--sign" | "--local-user" | "-e" | "--edit"
                ) || short_cluster_has(a, "asue")
            });
            let message = rest.iter().any(|a| {
                matches!(a.split('=').next().unwrap_or(a), "--message" | "--file")
                    || short_cluster_has(a, "mF")
            });
            (annotated && !message)
                .then(|| {
                    found(
                        "git tag".into(),
                        "opens the editor the config names (no -m)",
                    )
                })
                .flatten()
        }
        _ => None,
    }
}

/// `git config …` that edits, or names a key whose value is a program.
fn git_config(rest: &[String]) -> Option<RunsPrograms> {
    let reads = rest.iter().any(|a| {
        matches!(
            a.as_str(),
            "--get" | "--get-all" | "--get-regexp" | "-l" | "--list" | "get" | "list"
        )
    });
    if let Some(a) = rest
        .iter()
        .find(|a| matches!(a.as_str(), "-e" | "--edit" | "edit"))
    {
        return RunsPrograms::new(
            format!("git config {a}"),
            "opens the editor the config names",
        );
    }
    if reads {
        return None;
    }
    let key = rest
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(|a| a.to_ascii_lowercase())
        .find(|k| program_key(k))?;
    RunsPrograms::new(
        format!("git config {key}"),
        "sets a key whose value is a program git runs",
    )
}

/// A git configuration key (lowercased) whose value names a program.
fn program_key(key: &str) -> bool {
    const SECTIONS: &[&str] = &[
        "alias.",
        "core.",
        "pager.",
        "filter.",
        "credential.",
        "include.",
        "includeif.",
    ];
    const EXACT: &[&str] = &["sequence.editor", "gpg.program"];
    const ENDINGS: &[&str] = &[
        ".command",
        ".cmd",
        ".textconv",
        ".program",
        ".helper",
        ".editor",
        ".sshcommand",
        ".uploadpack",
        ".receivepack",
        ".proxy",
    ];
    SECTIONS.iter().any(|s| key.starts_with(s))
        || EXACT.contains(&key)
        || ENDINGS.iter().any(|e| key.ends_with(e))
}

fn tar(args: &[String]) -> Option<RunsPrograms> {
    const LONG: &[&str] = &[
        "--to-command",
        "--use-compress-program",
        "--checkpoint-action",
        "--info-script",
        "--new-volume-script",
        "--rsh-command",
    ];
    args.iter()
        .enumerate()
        .find(|(i, a)| {
            let long = a.split('=').next().unwrap_or(a);
            LONG.contains(&long)
                || short_cluster_has(a, "IF")
                // Old style: `tar xIf prog …` (first argument, no dash).
                || (*i == 0 && !a.starts_with('-') && a.contains(['I', 'F']))
        })
        .and_then(|(_, a)| RunsPrograms::new(format!("tar {a}"), "runs a program it names"))
}

fn rsync(args: &[String]) -> Option<RunsPrograms> {
    for arg in args {
        let long = arg.split('=').next().unwrap_or(arg);
        if matches!(long, "--rsh" | "--rsync-path") || short_cluster_has(arg, "e") {
            return RunsPrograms::new(format!("rsync {arg}"), "runs a remote shell it names");
        }
        if !arg.starts_with('-') && remote_operand(arg) {
            return RunsPrograms::new("rsync host:path", "runs ssh to reach the host");
        }
    }
    None
}

/// `host:path` or `rsync://…`: a colon before any slash.
fn remote_operand(arg: &str) -> bool {
    match (arg.find(':'), arg.find('/')) {
        (Some(colon), Some(slash)) => colon < slash,
        (Some(_), None) => true,
        (None, _) => false,
    }
}
