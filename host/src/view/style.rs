//! The view's colours: a teammate's state and the reference's colour names
//! as terminal styles, shared by the board and the screens over it.

use ratatui::style::{Color, Modifier, Style};

use super::board::MemberState;

/// How a teammate's state word is drawn.
pub fn state_style(state: &MemberState) -> Style {
    let s = Style::default();
    match state {
        MemberState::Active => s.fg(Color::Green),
        MemberState::AwaitingApproval => s.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        MemberState::Stopping => s.fg(Color::Magenta),
        MemberState::Failed(_) | MemberState::Killed | MemberState::Dead => s.fg(Color::Red),
        MemberState::Idle | MemberState::Stopped => s.add_modifier(Modifier::DIM),
        MemberState::Compiling => s.fg(Color::Cyan),
        MemberState::Starting | MemberState::Unknown => s,
    }
}

/// The reference's teammate colour names as terminal colours.
pub fn color(name: Option<&str>) -> Color {
    match name.unwrap_or("") {
        "red" => Color::Red,
        "blue" => Color::Blue,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "purple" => Color::Magenta,
        "orange" => Color::LightRed,
        "pink" => Color::LightMagenta,
        "cyan" => Color::Cyan,
        _ => Color::Reset,
    }
}
