//! Choosing a backend, in the reference's order (its `isInProcessEnabled`):
//!
//! 1. a non-interactive session → in-process (panes nobody sees are useless);
//! 2. a configured mode (`in-process`, `process`, `tmux`) wins;
//! 3. `auto` inside tmux (`$TMUX` set) → tmux;
//! 4. otherwise → in-process.

use super::{BackendKind, TeammateMode};

/// The backend for a session with `mode` configured. Pure: the caller says
/// whether the session is interactive and runs inside tmux ([`inside_tmux`]).
pub fn detect(mode: TeammateMode, interactive: bool, in_tmux: bool) -> BackendKind {
    if !interactive {
        return BackendKind::InProcess;
    }
    match mode {
        TeammateMode::InProcess => BackendKind::InProcess,
        TeammateMode::Process => BackendKind::Process,
        TeammateMode::Tmux => BackendKind::Tmux,
        TeammateMode::Auto if in_tmux => BackendKind::Tmux,
        TeammateMode::Auto => BackendKind::InProcess,
    }
}

/// Whether this process runs inside tmux (`$TMUX` is set and not empty).
pub fn inside_tmux() -> bool {
    std::env::var_os("TMUX").is_some_and(|v| !v.is_empty())
}

/// Whether the session is interactive: standard input or output is a terminal.
pub fn interactive_terminal() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() || std::io::stdout().is_terminal()
}

#[cfg(test)]
mod tests {
    use super::*;
    use BackendKind::*;

    #[test]
    fn a_non_interactive_session_always_runs_teammates_in_process() {
        for mode in [
            TeammateMode::Auto,
            TeammateMode::InProcess,
            TeammateMode::Process,
            TeammateMode::Tmux,
        ] {
            for in_tmux in [false, true] {
                assert_eq!(detect(mode, false, in_tmux), InProcess, "{mode} {in_tmux}");
            }
        }
    }

    #[test]
    fn a_configured_mode_wins_over_tmux_detection() {
        for in_tmux in [false, true] {
            assert_eq!(detect(TeammateMode::InProcess, true, in_tmux), InProcess);
            assert_eq!(detect(TeammateMode::Process, true, in_tmux), Process);
            assert_eq!(detect(TeammateMode::Tmux, true, in_tmux), Tmux);
        }
    }

    #[test]
    fn auto_is_tmux_inside_tmux_and_in_process_outside() {
        assert_eq!(detect(TeammateMode::Auto, true, true), Tmux);
        assert_eq!(detect(TeammateMode::Auto, true, false), InProcess);
    }

    #[test]
    fn modes_parse_from_their_settings_spelling_and_refuse_others_with_the_list() {
        for name in TeammateMode::NAMES {
            let mode: TeammateMode = name.parse().unwrap();
            assert_eq!(mode.as_str(), name);
        }
        let err = "iterm2".parse::<TeammateMode>().unwrap_err();
        assert!(err.contains("auto, in-process, process, tmux"), "{err}");
    }
}
