//! The screens that open over the board: a request in full, a line being
//! typed (a denial's reason, a message), one teammate in detail, and the
//! help. Each names its keys on its bottom border, fitted like the board's
//! keys bar (`fit::key_bar`), so a key is never cut.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::board::{Board, MateRow, MemberState};
use super::detail::Detail;
use super::fit::{self, key_bar, state_word, wrap, Key, Moment, SPINNER};
use super::keys::HELP;
use super::style::state_style;
use crate::protocol::describe::printable_line;

/// A block with `title` on top and `keys` fitted on its bottom border.
fn framed(title: String, keys: &[Key], width: u16) -> Block<'static> {
    let bar = key_bar(keys, width.saturating_sub(4) as usize);
    Block::default()
        .borders(Borders::ALL)
        .title(fit::clip(&title, width.saturating_sub(2) as usize))
        .title_bottom(Line::from(format!(" {bar} ")))
}

/// The pending request `id` in full.
pub fn request(frame: &mut Frame, board: &Board, id: &str) {
    let Some(p) = board.pending.iter().find(|p| p.request_id == id) else {
        return;
    };
    let area = centered(frame.area(), 80, 70);
    frame.render_widget(Clear, area);
    let text = format!("{}\n\nrequest {}", p.detail, printable_line(&p.request_id));
    let keys = [
        Key::new("a", "approve", 0),
        Key::new("A", "approve+remember", 1),
        Key::new("d", "deny", 0),
        Key::new("Esc", "back", 0),
    ];
    let title = format!("{} request from {}", p.kind, p.from);
    let paragraph = Paragraph::new(text)
        .wrap(Wrap { trim: false })
        .block(framed(title, &keys, area.width));
    frame.render_widget(paragraph, area);
}

/// A line being typed, under `title`.
pub fn prompt(frame: &mut Frame, title: &str, keys: &[Key], text: &str) {
    let area = centered(frame.area(), 70, 20);
    let area = Rect {
        height: area.height.max(5).min(frame.area().height),
        ..area
    };
    frame.render_widget(Clear, area);
    let paragraph = Paragraph::new(text.to_string())
        .wrap(Wrap { trim: false })
        .block(framed(title.to_string(), keys, area.width));
    frame.render_widget(paragraph, area);
}

/// Every key, on the whole screen.
pub fn help(frame: &mut Frame) {
    let area = frame.area();
    frame.render_widget(Clear, area);
    // Every key's character is one column wide: padding by characters
    // lines the columns up.
    let keys_w = HELP
        .iter()
        .map(|(_, k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    let screen_w = HELP
        .iter()
        .map(|(s, _, _)| s.chars().count())
        .max()
        .unwrap_or(0);
    let lines: Vec<Line> = HELP
        .iter()
        .map(|(screen, keys, what)| {
            Line::from(format!("{screen:<screen_w$}  {keys:<keys_w$}  {what}"))
        })
        .collect();
    let paragraph = Paragraph::new(lines)
        .wrap(Wrap { trim: false })
        .block(framed(
            "help: every key".into(),
            &[Key::new("any key", "back", 0)],
            area.width,
        ));
    frame.render_widget(paragraph, area);
}

/// One teammate in detail, on the whole screen: its state and task, its
/// turn in progress, its recent turns and tool calls (each wrapped, never
/// cut without `…`), and its log: the last lines that fit, or, scrolled
/// `back` lines from the end, older ones (the title says how far).
pub fn detail(
    frame: &mut Frame,
    name: &str,
    row: Option<&MateRow>,
    detail: Option<&Detail>,
    moment: &Moment,
    back: usize,
) {
    let area = frame.area();
    frame.render_widget(Clear, area);
    let keys = [
        Key::new("m", "message", 1),
        Key::new("PgUp/PgDn", "scroll the log", 2),
        Key::new("Esc", "back", 0),
    ];
    let block = framed(format!("teammate {name}"), &keys, area.width);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let w = inner.width as usize;
    let mut top: Vec<Line> = Vec::new();
    if let Some(m) = row {
        let mut s = format!("state: {}", state_word(&m.state, false));
        if let Some((id, doing)) = &m.task {
            s += &format!(" · task #{id} {doing}");
        }
        if let Some(model) = &m.model {
            s += &format!(" · model: {model}");
        }
        for l in wrap(&s, w, 3) {
            top.push(Line::styled(l, state_style(&m.state)));
        }
        if let MemberState::Failed(why) = &m.state {
            for l in wrap(&printable_line(why), w, 6) {
                top.push(Line::from(l));
            }
        }
    }
    let Some(d) = detail else {
        top.push(Line::from("reading…"));
        frame.render_widget(Paragraph::new(top), inner);
        return;
    };
    match &d.turn {
        Some((what, started)) => {
            let took = started
                .and_then(|t| moment.now.duration_since(t).ok())
                .map(|t| format!(" ({})", fit::elapsed(t)))
                .unwrap_or_default();
            let spin = SPINNER[moment.tick % SPINNER.len()];
            for l in wrap(&format!("{spin} turn now{took}: {what}"), w, 3) {
                top.push(Line::from(l));
            }
        }
        None => top.push(Line::from("no turn in progress")),
    }
    if let Some(net) = &d.network {
        for l in wrap(&format!("network: {net}"), w, 3) {
            top.push(Line::from(l));
        }
    }
    for p in &d.problems {
        for l in wrap(&format!("cannot read {p}"), w, 3) {
            top.push(Line::from(l));
        }
    }
    let section = |title: &str, items: &[String], empty: &str, max: usize| {
        let mut lines = vec![Line::styled(
            title.to_string(),
            Style::default().add_modifier(Modifier::BOLD),
        )];
        let item_w = w.saturating_sub(2).max(1);
        if items.is_empty() {
            for l in wrap(empty, item_w, 3) {
                lines.push(Line::from(format!("  {l}")));
            }
        }
        for item in items.iter().take(max) {
            for l in wrap(item, item_w, 2) {
                lines.push(Line::from(format!("  {l}")));
            }
        }
        lines
    };
    // Turns and tool calls get a few lines each; the log the rest.
    let few = if inner.height < 26 { 3 } else { 6 };
    let turns = section("recent turns (newest first)", &d.turns, "none yet", few);
    let tools = section(
        "tool calls (newest first)",
        &d.tools,
        "none recorded (a teammate without a model calls tools through the host: see its log)",
        few,
    );
    let mut log_title = match &d.log_path {
        Some(p) => format!("log {}", printable_line(&p.display().to_string())),
        None => "log".to_string(),
    };
    let heights = [top.len(), turns.len(), tools.len()].map(|h| h as u16);
    let [a, b, c, rest] = Layout::vertical([
        Constraint::Length(heights[0]),
        Constraint::Length(heights[1]),
        Constraint::Length(heights[2]),
        Constraint::Min(2),
    ])
    .areas(inner);
    frame.render_widget(Paragraph::new(top), a);
    frame.render_widget(Paragraph::new(turns), b);
    frame.render_widget(Paragraph::new(tools), c);
    // The log's last lines, wrapped, as many as fit under its title.
    let room = rest.height.saturating_sub(1) as usize;
    let mut wrapped: Vec<String> = Vec::new();
    for l in &d.log {
        wrapped.extend(wrap(l, w.saturating_sub(2).max(1), 4));
    }
    let back = back.min(wrapped.len().saturating_sub(room));
    let from = wrapped.len().saturating_sub(room + back);
    if back > 0 {
        log_title += &format!(" · {back} line(s) back from the end (PgDn)");
    }
    let mut log = vec![Line::styled(
        fit::clip(&log_title, w),
        Style::default().add_modifier(Modifier::BOLD),
    )];
    if d.log.is_empty() {
        log.push(Line::from("  empty"));
    }
    log.extend(
        wrapped[from..from + room.min(wrapped.len() - from)]
            .iter()
            .map(|l| Line::from(format!("  {l}"))),
    );
    frame.render_widget(Paragraph::new(log), rest);
}

/// A rectangle `width_pct` × `height_pct` of `area`, centred; on a small
/// terminal (under 100 columns) nearly all of it.
fn centered(area: Rect, width_pct: u16, height_pct: u16) -> Rect {
    let (width_pct, height_pct) = if area.width < 100 {
        (96, height_pct.clamp(80, 96))
    } else {
        (width_pct, height_pct)
    };
    let [_, v, _] = Layout::vertical([
        Constraint::Percentage((100 - height_pct) / 2),
        Constraint::Percentage(height_pct),
        Constraint::Percentage((100 - height_pct) / 2),
    ])
    .areas(area);
    let [_, h, _] = Layout::horizontal([
        Constraint::Percentage((100 - width_pct) / 2),
        Constraint::Percentage(width_pct),
        Constraint::Percentage((100 - width_pct) / 2),
    ])
    .areas(v);
    h
}
