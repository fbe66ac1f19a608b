//! The view's colours: a teammate's state and the reference's colour names
//! as terminal styles, shared by the board and the screens over it.

use ratatui::style::{Color, Modifier, Style};

use super::board::MateState;

/// How a teammate's state word is drawn.
pub fn state_style(state: &MateState) -> Style {
    let s = Style::default();
    match state {
        MateState::Running => s.fg(Color::Green),
        MateState::AwaitingApproval => s.fg(Color::Yellow).add_modifier(Modifier::BOLD),
        MateState::Stopping => s.fg(Color::Magenta),
        MateState::Failed(_) | MateState::Dead => s.fg(Color::Red),
        MateState::Idle | MateState::Done => s.add_modifier(Modifier::DIM),
        MateState::Compiling => s.fg(Color::Cyan),
        MateState::Starting | MateState::Unknown => s,
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
