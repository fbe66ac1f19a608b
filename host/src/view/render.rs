//! Draws a [`Board`] and the keyboard's [`Ui`] into a ratatui frame: a header
//! with the task progress bar, teammates and the task board side by side, the
//! requests waiting for the lead, the message feed (newest first) and a footer
//! with the keys; a request, a denial reason or a message being typed opens
//! over it. Pure: the same board and UI draw the same screen.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, Clear, Gauge, List, ListItem, Paragraph, Row, Table, Wrap,
};
use ratatui::Frame;

use super::board::{clock, Board, MateState};
use super::keys::{Screen, Ui};
use crate::protocol::describe::{one_line, printable_line};

/// Draws the whole view.
pub fn draw(frame: &mut Frame, board: &Board, ui: &Ui, title: &str) {
    let pending_height = (board.pending.len().clamp(1, 6) + 2) as u16;
    let [header, middle, pending, feed, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Min(6),
        Constraint::Length(pending_height),
        Constraint::Length(9),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    draw_header(frame, header, board, title);
    let [mates, tasks] =
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(middle);
    draw_teammates(frame, mates, board, ui);
    draw_tasks(frame, tasks, board);
    draw_pending(frame, pending, board, ui);
    draw_feed(frame, feed, board);
    draw_footer(frame, footer, ui);
    match &ui.screen {
        Screen::Board => {}
        Screen::Request(id) => draw_request(frame, board, id),
        Screen::Reason(_, text) => draw_prompt(
            frame,
            "deny: the reason the teammate will read (Enter deny · Esc cancel)",
            &format!("> {text}_"),
        ),
        Screen::Message(to, text) => {
            let name = board
                .teammates
                .get(*to)
                .map(|m| m.name.as_str())
                .unwrap_or("?");
            draw_prompt(
                frame,
                "message from the lead (Tab change teammate · Enter send · Esc cancel)",
                &format!("to {name}\n> {text}_"),
            )
        }
    }
}

fn draw_header(frame: &mut Frame, area: Rect, board: &Board, title: &str) {
    let mut heading = format!("{title} · team {}", printable_line(&board.team));
    if let Some(d) = &board.description {
        heading += &format!(" — {}", printable_line(d));
    }
    let label = format!(
        "tasks {}/{} completed · {} teammate(s) · {} waiting for you",
        board.completed,
        board.tasks.len(),
        board.teammates.len(),
        board.pending.len()
    );
    let gauge = Gauge::default()
        .block(Block::default().borders(Borders::ALL).title(heading))
        .gauge_style(Style::default().fg(Color::Green))
        .ratio(board.progress())
        .label(label);
    frame.render_widget(gauge, area);
}

fn draw_teammates(frame: &mut Frame, area: Rect, board: &Board, ui: &Ui) {
    let visible = area.height.saturating_sub(3) as usize;
    let rows = board
        .teammates
        .iter()
        .skip(ui.mates_offset)
        .take(visible)
        .map(|m| {
            Row::new(vec![
                Cell::from(m.name.clone()).style(Style::default().fg(color(m.color.as_deref()))),
                Cell::from(m.state.label()).style(state_style(&m.state)),
                Cell::from(m.backend.clone().unwrap_or_else(|| "-".into())),
                Cell::from({
                    let doing = match (&m.state, &m.task, &m.model) {
                        // Why it failed says more than the task it dropped.
                        (MateState::Failed(why), _, _) => one_line(why),
                        (_, Some((id, doing)), Some(model)) => format!("#{id} {doing} · {model}"),
                        (_, Some((id, doing)), None) => format!("#{id} {doing}"),
                        (_, None, Some(model)) => model.clone(),
                        (_, None, None) => "-".into(),
                    };
                    // Sub-agents first: a long task would hide them (a
                    // failure's reason stays alone).
                    match (&m.state, &m.subagents) {
                        (MateState::Failed(_), _) | (_, None) => doing,
                        (_, Some(sub)) => format!("{sub} · {doing}"),
                    }
                }),
                Cell::from(m.last_activity.as_deref().map(clock).unwrap_or_default()),
            ])
        });
    let shown_to = (ui.mates_offset + visible).min(board.teammates.len());
    let title = if board.teammates.len() > visible {
        format!(
            "teammates {}–{} of {} (PgUp/PgDn)",
            ui.mates_offset + 1,
            shown_to,
            board.teammates.len()
        )
    } else {
        format!("teammates ({})", board.teammates.len())
    };
    let table = Table::new(
        rows,
        [
            Constraint::Length(14),
            Constraint::Length(17),
            Constraint::Length(10),
            Constraint::Min(10),
            Constraint::Length(8),
        ],
    )
    .header(header_row(["name", "state", "backend", "task", "last"]))
    .block(Block::default().borders(Borders::ALL).title(title));
    frame.render_widget(table, area);
}

fn draw_tasks(frame: &mut Frame, area: Rect, board: &Board) {
    let rows = board.tasks.iter().map(|t| {
        let style = match t.status.as_str() {
            "completed" => Style::default().fg(Color::Green),
            "in_progress" => Style::default().fg(Color::Yellow),
            _ => Style::default(),
        };
        let blocked = if t.blocked_by.is_empty() {
            String::new()
        } else {
            format!("#{}", t.blocked_by.join(",#"))
        };
        Row::new(vec![
            Cell::from(format!("#{}", t.id)),
            Cell::from(t.status.clone()).style(style),
            Cell::from(t.owner.clone().unwrap_or_else(|| "-".into())),
            Cell::from(blocked),
            Cell::from(t.subject.clone()),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(5),
            Constraint::Length(11),
            Constraint::Length(12),
            Constraint::Length(8),
            Constraint::Min(10),
        ],
    )
    .header(header_row(["id", "status", "owner", "blocked", "subject"]))
    .block(Block::default().borders(Borders::ALL).title(format!(
        "tasks {}/{}",
        board.completed,
        board.tasks.len()
    )));
    frame.render_widget(table, area);
}

fn draw_pending(frame: &mut Frame, area: Rect, board: &Board, ui: &Ui) {
    let items: Vec<ListItem> = if board.pending.is_empty() {
        vec![ListItem::new("nothing waits for you")]
    } else {
        board
            .pending
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let marker = if i == ui.selected { "▶ " } else { "  " };
                let line = format!("{marker}{} {} asks: {}", p.from, p.kind, p.what);
                let style = if i == ui.selected {
                    Style::default().add_modifier(Modifier::REVERSED)
                } else {
                    Style::default()
                };
                ListItem::new(line).style(style)
            })
            .collect()
    };
    let list = List::new(items).block(
        Block::default()
            .borders(Borders::ALL)
            .title("waiting for you (a approve · d deny · v view)")
            .border_style(if board.pending.is_empty() {
                Style::default()
            } else {
                Style::default().fg(Color::Yellow)
            }),
    );
    frame.render_widget(list, area);
}

fn draw_feed(frame: &mut Frame, area: Rect, board: &Board) {
    let items: Vec<ListItem> = board
        .feed
        .iter()
        .take(area.height as usize)
        .map(|m| {
            let color = board
                .teammates
                .iter()
                .find(|t| t.name == m.from)
                .and_then(|t| t.color.as_deref());
            ListItem::new(Line::from(vec![
                Span::raw(format!("{} ", clock(&m.timestamp))),
                Span::styled(m.from.clone(), Style::default().fg(self::color(color))),
                Span::raw(format!(": {}", m.text)),
            ]))
        })
        .collect();
    let list = List::new(items).block(
        Block::default()
            .borders(Borders::ALL)
            .title(format!("messages to {} (newest first)", board.lead)),
    );
    frame.render_widget(list, area);
}

fn draw_footer(frame: &mut Frame, area: Rect, ui: &Ui) {
    let keys = "↑↓ pick · a approve · A approve+remember · d deny · v view · m message · PgUp/PgDn scroll · q quit";
    let text = match &ui.note {
        Some(note) => format!("{note}   ·   {keys}"),
        None => keys.to_string(),
    };
    frame.render_widget(
        Paragraph::new(text).style(Style::default().add_modifier(Modifier::DIM)),
        area,
    );
}

fn draw_request(frame: &mut Frame, board: &Board, id: &str) {
    let Some(p) = board.pending.iter().find(|p| p.request_id == id) else {
        return;
    };
    let area = centered(frame.area(), 80, 70);
    frame.render_widget(Clear, area);
    let text = format!("{}\n\nrequest {}", p.detail, printable_line(&p.request_id));
    let paragraph = Paragraph::new(text).wrap(Wrap { trim: false }).block(
        Block::default().borders(Borders::ALL).title(format!(
            "{} request from {} (a approve · A approve+remember · d deny · Esc back)",
            p.kind, p.from
        )),
    );
    frame.render_widget(paragraph, area);
}

fn draw_prompt(frame: &mut Frame, title: &str, text: &str) {
    let area = centered(frame.area(), 70, 20);
    frame.render_widget(Clear, area);
    let paragraph = Paragraph::new(text.to_string())
        .wrap(Wrap { trim: false })
        .block(
            Block::default()
                .borders(Borders::ALL)
                .title(title.to_string()),
        );
    frame.render_widget(paragraph, area);
}

fn centered(area: Rect, width_pct: u16, height_pct: u16) -> Rect {
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

fn header_row<const N: usize>(names: [&'static str; N]) -> Row<'static> {
    Row::new(names).style(Style::default().add_modifier(Modifier::BOLD))
}

fn state_style(state: &MateState) -> Style {
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
fn color(name: Option<&str>) -> Color {
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

#[cfg(test)]
mod tests {
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;
    use crate::status::{FeedItem, PendingView};
    use crate::view::board::{MateRow, TaskRow};

    fn screen(board: &Board, ui: &Ui) -> String {
        let mut terminal = Terminal::new(TestBackend::new(140, 40)).unwrap();
        terminal.draw(|f| draw(f, board, ui, "teamhost")).unwrap();
        let buffer = terminal.backend().buffer().clone();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol().to_string())
                    .collect::<String>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn board() -> Board {
        Board {
            team: "demo".into(),
            description: Some("a test team".into()),
            lead: "team-lead".into(),
            teammates: vec![MateRow {
                name: "alice".into(),
                color: Some("blue".into()),
                state: MateState::AwaitingApproval,
                backend: Some("in-process".into()),
                task: Some(("2".into(), "Write the docs".into())),
                last_activity: Some("2026-11-22T01:02:03.000Z".into()),
                model: None,
                subagents: None,
            }],
            tasks: vec![
                TaskRow {
                    id: "1".into(),
                    status: "completed".into(),
                    owner: Some("alice".into()),
                    blocked_by: vec![],
                    subject: "Read the code".into(),
                },
                TaskRow {
                    id: "2".into(),
                    status: "in_progress".into(),
                    owner: Some("alice".into()),
                    blocked_by: vec![],
                    subject: "Write the docs".into(),
                },
            ],
            completed: 1,
            pending: vec![PendingView {
                kind: "plan",
                request_id: "plan_approval-1@alice@demo".into(),
                from: "alice".into(),
                what: "# Plan".into(),
                detail: "alice submits the plan p.md:\n\n# Plan\nstep one\nstep two".into(),
            }],
            feed: vec![FeedItem {
                from: "alice".into(),
                timestamp: "2026-11-22T01:02:03.000Z".into(),
                text: "idle (available)".into(),
            }],
        }
    }

    #[test]
    fn the_board_shows_teammates_tasks_progress_requests_and_messages() {
        let s = screen(&board(), &Ui::default());
        for want in [
            "team demo — a test team",
            "tasks 1/2 completed",
            "alice",
            "awaiting approval",
            "#2 Write the docs",
            "in_progress",
            "alice plan asks: # Plan",
            "idle (available)",
            "q quit",
        ] {
            assert!(s.contains(want), "{want:?} missing from\n{s}");
        }
    }

    #[test]
    fn a_teammates_sub_agents_show_in_its_row() {
        let mut b = board();
        b.teammates[0].subagents = Some("subs 1/3 d2/2".into());
        let s = screen(&b, &Ui::default());
        assert!(s.contains("subs 1/3 d2/2 · #2 Wri"), "{s}");
    }

    #[test]
    fn a_failed_teammate_shows_why() {
        let mut b = board();
        b.teammates[0].state = MateState::Failed("broke its memory limit (64 MiB)".into());
        let s = screen(&b, &Ui::default());
        assert!(s.contains("broke its memory limit"), "{s}");
    }

    #[test]
    fn the_request_screen_shows_the_whole_plan() {
        let ui = Ui {
            screen: Screen::Request("plan_approval-1@alice@demo".into()),
            ..Ui::default()
        };
        let s = screen(&board(), &ui);
        assert!(s.contains("step two"), "{s}");
        assert!(s.contains("plan_approval-1@alice@demo"), "{s}");
    }

    #[test]
    fn a_hundred_teammates_scroll_and_say_how_many() {
        let mut b = board();
        b.teammates = (0..100)
            .map(|i| MateRow {
                name: format!("mate-{i:03}"),
                state: MateState::Idle,
                ..b.teammates[0].clone()
            })
            .collect();
        let ui = Ui {
            mates_offset: 50,
            ..Ui::default()
        };
        let s = screen(&b, &ui);
        assert!(s.contains("of 100"), "{s}");
        assert!(s.contains("mate-050") && !s.contains("mate-049"), "{s}");
    }
}
