//! Draws a [`Board`] and the keyboard's [`Ui`] into a ratatui frame: a header
//! with the task progress bar, teammates and the task board (side by side
//! from 150 columns, one above the other below), the requests waiting for
//! the lead, the message feed (newest first) and a footer with the keys; a
//! request, a denial reason, a message being typed, a teammate's detail or
//! the help opens over it (`overlay.rs`). What does not fit gives way by
//! priority (`fit.rs`): columns go, state words shorten, subjects wrap.
//! Pure: the same board, UI and [`Moment`] draw the same screen.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{
    Block, Borders, Cell, Gauge, List, ListItem, ListState, Paragraph, Row, Table,
};
use ratatui::Frame;

use super::board::{clock, Board, MateRow, MemberState};
use super::detail::Detail;
use super::fit::{
    self, clip, key_bar, state_width, state_word_for, width, wrap, Key, Moment, SPINNER,
};
use super::keys::{Focus, Screen, Ui};
use super::overlay;
use super::style::{color, state_style};
use crate::protocol::describe::{one_line, printable_line};

/// Below this width teammates and tasks stack; from it they sit side by side.
const SIDE_BY_SIDE: u16 = 150;
/// Below this height the header and the feed take fewer lines.
const COMPACT: u16 = 30;

/// Draws the whole view; `detail` is the teammate screen's content when
/// that screen is up.
pub fn draw(
    frame: &mut Frame,
    board: &Board,
    ui: &Ui,
    title: &str,
    moment: &Moment,
    detail: Option<&Detail>,
) {
    let area = frame.area();
    let compact = area.height < COMPACT;
    let pending_rows = board.pending.len().clamp(1, if compact { 3 } else { 6 });
    let [header, middle, pending, feed, footer] = Layout::vertical([
        Constraint::Length(if compact { 2 } else { 3 }),
        Constraint::Min(6),
        Constraint::Length(pending_rows as u16 + 2),
        Constraint::Length(if compact { 4 } else { 9 }),
        Constraint::Length(if ui.note.is_some() { 2 } else { 1 }),
    ])
    .areas(area);
    draw_header(frame, header, board, title, compact);
    let [mates, tasks] = if area.width >= SIDE_BY_SIDE {
        Layout::horizontal([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(middle)
    } else {
        // Teammates take what their rows need, the tasks get at least half.
        let want = mate_heights(board, middle.width.saturating_sub(2))
            .iter()
            .sum::<u16>()
            + if compact { 2 } else { 3 };
        let mates_h = want.min(middle.height - middle.height / 2).max(4);
        Layout::vertical([Constraint::Length(mates_h), Constraint::Min(3)]).areas(middle)
    };
    draw_teammates(frame, mates, board, ui, moment, compact);
    draw_tasks(frame, tasks, board, compact);
    draw_pending(frame, pending, board, ui);
    draw_feed(frame, feed, board);
    draw_footer(frame, footer, board, ui);
    match &ui.screen {
        Screen::Board => {}
        Screen::Request(id) => overlay::request(frame, board, id),
        Screen::Reason(_, text) => overlay::prompt(
            frame,
            "deny: the reason the teammate will read",
            &[Key::new("Enter", "deny", 0), Key::new("Esc", "cancel", 0)],
            &format!("> {text}_"),
        ),
        Screen::Message(to, text) => {
            let name = board
                .teammates
                .get(*to)
                .map(|m| m.name.as_str())
                .unwrap_or("?");
            overlay::prompt(
                frame,
                "message from the lead",
                &[
                    Key::new("Tab", "change teammate", 1),
                    Key::new("Enter", "send", 0),
                    Key::new("Esc", "cancel", 0),
                ],
                &format!("to {name}\n> {text}_"),
            )
        }
        Screen::Detail(name) => {
            let row = board.teammates.iter().find(|m| &m.name == name);
            overlay::detail(frame, name, row, detail, moment, ui.detail_back)
        }
        Screen::Help => overlay::help(frame),
    }
}

fn draw_header(frame: &mut Frame, area: Rect, board: &Board, title: &str, compact: bool) {
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
    let label = clip(&label, area.width.saturating_sub(2) as usize);
    let heading = clip(&heading, area.width.saturating_sub(2) as usize);
    let gauge = Gauge::default()
        .gauge_style(Style::default().fg(Color::Green))
        .ratio(board.progress())
        .label(label);
    if compact {
        let [top, bar] =
            Layout::vertical([Constraint::Length(1), Constraint::Length(1)]).areas(area);
        frame.render_widget(
            Paragraph::new(heading).style(Style::default().add_modifier(Modifier::BOLD)),
            top,
        );
        frame.render_widget(gauge, bar);
    } else {
        let gauge = gauge.block(Block::default().borders(Borders::ALL).title(heading));
        frame.render_widget(gauge, area);
    }
}

/// The teammates table's columns for `inner` columns of room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MateColumns {
    name: u16,
    short_states: bool,
    turn: bool,
    backend: Option<u16>,
    last: bool,
    doing: u16,
}

/// The `last` and backend columns come only when the task column keeps
/// this much room.
const DOING_ROOMY: u16 = 36;
/// Below this much room for the task, states take their short words.
const DOING_SHORT: u16 = 28;

impl MateColumns {
    /// Name, state, turn (when a teammate is busy) and task always; the
    /// `last` time, then the backend, only when the task keeps
    /// [`DOING_ROOMY`]; long state words only when they leave it
    /// [`DOING_SHORT`].
    fn fit(board: &Board, inner: u16) -> MateColumns {
        let name = board
            .teammates
            .iter()
            .map(|m| width(&m.name))
            .max()
            .unwrap_or(0)
            .clamp(4, 16) as u16;
        let turn = board
            .teammates
            .iter()
            .any(|m| m.busy() || m.turn_started.is_some());
        let backend_w = board
            .teammates
            .iter()
            .filter_map(|m| m.backend.as_deref().map(width))
            .max()
            .map(|w| w.max(7) as u16);
        let mut c = MateColumns {
            name,
            short_states: false,
            turn,
            backend: None,
            last: false,
            doing: 0,
        };
        if c.fixed() + 1 + DOING_SHORT > inner {
            c.short_states = true;
        }
        c.last = c.fixed() + 1 + 9 + DOING_ROOMY <= inner;
        if let Some(w) = backend_w {
            if c.fixed() + 1 + w + 1 + DOING_ROOMY <= inner {
                c.backend = Some(w);
            }
        }
        c.doing = inner.saturating_sub(c.fixed() + 1).max(8);
        c
    }

    /// The columns but the task's, with the spaces between them.
    fn fixed(&self) -> u16 {
        let mut w = self.name + 1 + state_width(self.short_states) as u16;
        if self.turn {
            w += 1 + 8;
        }
        if let Some(b) = self.backend {
            w += 1 + b;
        }
        if self.last {
            w += 1 + 8;
        }
        w
    }
}

/// What a teammate's row says it is doing: why it failed, else its
/// sub-agents, task and model use.
fn doing(m: &MateRow) -> String {
    let doing = match (&m.state, &m.task, &m.model) {
        // Why it failed says more than the task it dropped.
        (MemberState::Failed(why), _, _) => one_line(why),
        (_, Some((id, doing)), Some(model)) => format!("#{id} {doing} · {model}"),
        (_, Some((id, doing)), None) => format!("#{id} {doing}"),
        (_, None, Some(model)) => model.clone(),
        (_, None, None) => "-".into(),
    };
    // Sub-agents first: a long task would hide them (a failure's reason
    // stays alone).
    match (&m.state, &m.subagents) {
        (MemberState::Failed(_), _) | (_, None) => doing,
        (_, Some(sub)) => format!("{sub} · {doing}"),
    }
}

/// Lines a teammate's task gets before it says `…`.
const DOING_LINES: usize = 2;

/// The height of each teammate's row for `inner` columns.
fn mate_heights(board: &Board, inner: u16) -> Vec<u16> {
    let cols = MateColumns::fit(board, inner);
    board
        .teammates
        .iter()
        .map(|m| wrap(&doing(m), cols.doing as usize, DOING_LINES).len() as u16)
        .collect()
}

/// The spinner and elapsed time of a teammate's turn: `⠋ 1m02s`.
fn turn_cell(m: &MateRow, moment: &Moment) -> String {
    let spin = if m.busy() {
        SPINNER[moment.tick % SPINNER.len()]
    } else {
        " "
    };
    match m
        .turn_started
        .filter(|_| !matches!(m.state, MemberState::Idle))
    {
        Some(t) => {
            let took = moment.now.duration_since(t).unwrap_or_default();
            format!("{spin} {}", fit::elapsed(took))
        }
        None => spin.trim_end().to_string(),
    }
}

/// Draws the teammates; `compact` leaves out the column names (a line
/// more for the rows).
fn draw_teammates(
    frame: &mut Frame,
    area: Rect,
    board: &Board,
    ui: &Ui,
    moment: &Moment,
    compact: bool,
) {
    let inner = area.width.saturating_sub(2);
    let cols = MateColumns::fit(board, inner);
    let heights = mate_heights(board, inner);
    let room = area.height.saturating_sub(if compact { 2 } else { 3 });
    // The chosen teammate stays in sight: scroll down to it if need be.
    let mut offset = ui.mates_offset.min(ui.mate);
    let fits = |from: usize, to: usize| heights[from..=to].iter().sum::<u16>() <= room;
    while ui.mate < heights.len() && offset < ui.mate && !fits(offset, ui.mate) {
        offset += 1;
    }
    let mut shown = 0;
    let mut used = 0;
    for h in heights.iter().skip(offset) {
        if used + h > room {
            break;
        }
        used += h;
        shown += 1;
    }
    let rows = board
        .teammates
        .iter()
        .enumerate()
        .skip(offset)
        .take(shown)
        .map(|(i, m)| {
            let lines = wrap(&doing(m), cols.doing as usize, DOING_LINES);
            let mut cells = vec![
                Cell::from(clip(&m.name, cols.name as usize))
                    .style(Style::default().fg(color(m.color.as_deref()))),
                Cell::from(state_word_for(
                    &m.state,
                    cols.short_states,
                    waits_for(board, &m.name),
                ))
                .style(state_style(&m.state)),
            ];
            if cols.turn {
                cells.push(Cell::from(turn_cell(m, moment)));
            }
            if let Some(b) = cols.backend {
                let backend = m.backend.as_deref().unwrap_or("-");
                cells.push(Cell::from(clip(backend, b as usize)));
            }
            let height = lines.len() as u16;
            cells.push(Cell::from(lines.join("\n")));
            if cols.last {
                cells.push(Cell::from(
                    m.last_activity.as_deref().map(clock).unwrap_or_default(),
                ));
            }
            let row = Row::new(cells).height(height);
            if ui.focus == Focus::Teammates && i == ui.mate {
                row.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                row
            }
        });
    let title = if shown < board.teammates.len() {
        format!(
            "teammates {}–{} of {} (PgUp/PgDn)",
            offset + 1,
            offset + shown,
            board.teammates.len()
        )
    } else {
        format!("teammates ({})", board.teammates.len())
    };
    let mut widths = vec![
        Constraint::Length(cols.name),
        Constraint::Length(state_width(cols.short_states) as u16),
    ];
    let mut names = vec!["name", "state"];
    if cols.turn {
        widths.push(Constraint::Length(8));
        names.push("turn");
    }
    if let Some(b) = cols.backend {
        widths.push(Constraint::Length(b));
        names.push("backend");
    }
    widths.push(Constraint::Min(cols.doing));
    names.push("task");
    if cols.last {
        widths.push(Constraint::Length(8));
        names.push("last");
    }
    let mut table =
        Table::new(rows, widths).block(Block::default().borders(Borders::ALL).title(title));
    if !compact {
        table = table.header(Row::new(names).style(Style::default().add_modifier(Modifier::BOLD)));
    }
    frame.render_widget(table, area);
}

/// Whom `name`'s oldest waiting request waits for, when it has one.
fn waits_for<'a>(board: &'a Board, name: &str) -> Option<&'a super::routing::WaitsFor> {
    let request = board.pending.iter().find(|p| p.from == name)?;
    board.routing.waits_for.get(&request.request_id)
}

/// A task status in six columns or fewer, for a narrow board.
fn short_status(status: &str) -> &str {
    match status {
        "pending" => "todo",
        "in_progress" => "doing",
        "completed" => "done",
        other => other,
    }
}

/// Lines a task's subject gets before it says `…`.
const SUBJECT_LINES: usize = 3;

/// Draws the task board; `compact` leaves out the column names. The title
/// says how many tasks are shown when not all fit.
fn draw_tasks(frame: &mut Frame, area: Rect, board: &Board, compact: bool) {
    let inner = area.width.saturating_sub(2);
    let id_w = board
        .tasks
        .iter()
        .map(|t| width(&t.id) + 1)
        .max()
        .unwrap_or(2)
        .max(2) as u16;
    let short = inner < 70;
    let status_w: u16 = if short { 6 } else { 11 };
    let owner_w = board
        .tasks
        .iter()
        .filter_map(|t| t.owner.as_deref().map(width))
        .max()
        .unwrap_or(1)
        .clamp(5, 12) as u16;
    let owner = inner >= 45;
    let blocked_text = |t: &super::board::TaskRow| {
        if t.blocked_by.is_empty() {
            String::new()
        } else {
            format!("after #{}", t.blocked_by.join(",#"))
        }
    };
    let blocked_w = board
        .tasks
        .iter()
        .map(|t| width(&blocked_text(t)))
        .max()
        .unwrap_or(0) as u16;
    let mut fixed = id_w + 1 + status_w + 1;
    if owner {
        fixed += owner_w + 1;
    }
    // The blocked column only when something is blocked and the subject
    // keeps 20 columns; else the subject says what it waits for.
    let blocked = blocked_w > 0 && fixed + blocked_w.max(7) + 1 + 20 <= inner;
    if blocked {
        fixed += blocked_w.max(7) + 1;
    }
    let subject_w = inner.saturating_sub(fixed).max(8);
    let mut room = area.height.saturating_sub(if compact { 2 } else { 3 });
    let mut shown = 0;
    let rows = board.tasks.iter().map_while(|t| {
        let style = match t.status.as_str() {
            "completed" => Style::default().fg(Color::Green),
            "in_progress" => Style::default().fg(Color::Yellow),
            _ => Style::default(),
        };
        let subject = match (blocked, t.blocked_by.is_empty()) {
            (false, false) => format!("({}) {}", blocked_text(t), t.subject),
            _ => t.subject.clone(),
        };
        let lines = wrap(&subject, subject_w as usize, SUBJECT_LINES);
        let status = if short {
            short_status(&t.status)
        } else {
            t.status.as_str()
        };
        let mut cells = vec![
            Cell::from(clip(&format!("#{}", t.id), id_w as usize)),
            Cell::from(status.to_string()).style(style),
        ];
        if owner {
            let who = t.owner.as_deref().unwrap_or("-");
            cells.push(Cell::from(clip(who, owner_w as usize)));
        }
        if blocked {
            cells.push(Cell::from(blocked_text(t)));
        }
        let height = lines.len() as u16;
        if height > room {
            return None;
        }
        room -= height;
        shown += 1;
        cells.push(Cell::from(lines.join("\n")));
        Some(Row::new(cells).height(height))
    });
    let rows: Vec<Row> = rows.collect();
    let mut widths = vec![Constraint::Length(id_w), Constraint::Length(status_w)];
    let mut names = vec!["id", "status"];
    if owner {
        widths.push(Constraint::Length(owner_w));
        names.push("owner");
    }
    if blocked {
        widths.push(Constraint::Length(blocked_w.max(7)));
        names.push("blocked");
    }
    widths.push(Constraint::Min(subject_w));
    names.push("subject");
    let mut title = format!("tasks {}/{}", board.completed, board.tasks.len());
    if shown < board.tasks.len() {
        title += &format!(" · {shown} shown");
    }
    let mut table =
        Table::new(rows, widths).block(Block::default().borders(Borders::ALL).title(title));
    if !compact {
        table = table.header(Row::new(names).style(Style::default().add_modifier(Modifier::BOLD)));
    }
    frame.render_widget(table, area);
}

fn draw_pending(frame: &mut Frame, area: Rect, board: &Board, ui: &Ui) {
    let inner = area.width.saturating_sub(2) as usize;
    let items: Vec<ListItem> = if board.pending.is_empty() {
        vec![ListItem::new("nothing waits for you")]
    } else {
        board
            .pending
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let marker = if i == ui.selected { "▶ " } else { "  " };
                let head = format!("{marker}{} {} asks: ", p.from, p.kind);
                let tail = match board.routing.waits_for.get(&p.request_id) {
                    Some(w) => format!("  [{}]", w.mark()),
                    None => String::new(),
                };
                // What is asked gives way first: whom it waits for stays.
                let room = inner.saturating_sub(width(&head) + width(&tail));
                let line = if room >= 8 {
                    format!("{head}{}{tail}", clip(&p.what, room))
                } else {
                    clip(&format!("{head}{}{tail}", p.what), inner)
                };
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
            .title(clip(
                &match &board.routing.last_decision {
                    Some(last) => format!("waiting for you · last: {last}"),
                    None => "waiting for you".to_string(),
                },
                inner,
            ))
            .border_style(if board.pending.is_empty() {
                Style::default()
            } else {
                Style::default().fg(Color::Yellow)
            }),
    );
    // The list scrolls to keep the chosen request in sight.
    let mut state = ListState::default().with_selected(Some(ui.selected));
    frame.render_stateful_widget(list, area, &mut state);
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
            let time = format!("{} ", clock(&m.timestamp));
            let room = (area.width.saturating_sub(2) as usize).saturating_sub(width(&time));
            let from = clip(&m.from, room.min(24));
            let text = clip(&format!(": {}", m.text), room.saturating_sub(width(&from)));
            ListItem::new(Line::from(vec![
                Span::raw(time),
                Span::styled(from, Style::default().fg(self::color(color))),
                Span::raw(text),
            ]))
        })
        .collect();
    let list = List::new(items).block(Block::default().borders(Borders::ALL).title(clip(
        &format!("messages to {} (newest first)", board.lead),
        area.width.saturating_sub(2) as usize,
    )));
    frame.render_widget(list, area);
}

/// The board's keys, in the order shown, ranked by what goes last.
fn board_keys(board: &Board) -> Vec<Key> {
    let waiting = !board.pending.is_empty();
    let mut keys = vec![Key::new("⇧↑↓", "teammate", 2), Key::new("Enter", "open", 2)];
    if waiting {
        keys.extend([
            Key::new("a", "approve", 1),
            Key::new("A", "approve+remember", 5),
            Key::new("d", "deny", 1),
            Key::new("v", "view", 4),
        ]);
    }
    keys.extend([
        Key::new("m", "message", 3),
        Key::new("PgUp/PgDn", "scroll", 6),
        Key::new("?", "help", 0),
        Key::new("q", "quit", 0),
    ]);
    keys
}

fn draw_footer(frame: &mut Frame, area: Rect, board: &Board, ui: &Ui) {
    let keys = key_bar(&board_keys(board), area.width as usize);
    let text = match &ui.note {
        Some(note) => format!("{}\n{keys}", clip(note, area.width as usize)),
        None => keys,
    };
    frame.render_widget(
        Paragraph::new(text).style(Style::default().add_modifier(Modifier::DIM)),
        area,
    );
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    use super::*;
    use crate::status::{FeedItem, PendingView};
    use crate::view::board::{MateRow, TaskRow};

    const NOW: Moment = Moment {
        now: SystemTime::UNIX_EPOCH,
        tick: 0,
    };

    fn screen_at(w: u16, h: u16, board: &Board, ui: &Ui, detail: Option<&Detail>) -> String {
        let mut terminal = Terminal::new(TestBackend::new(w, h)).unwrap();
        let now = Moment {
            now: SystemTime::UNIX_EPOCH + Duration::from_secs(1_000),
            ..NOW
        };
        terminal
            .draw(|f| draw(f, board, ui, "teamhost", &now, detail))
            .unwrap();
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

    fn screen(board: &Board, ui: &Ui) -> String {
        screen_at(140, 40, board, ui, None)
    }

    fn mate(name: &str, state: MemberState) -> MateRow {
        MateRow {
            name: name.into(),
            color: Some("blue".into()),
            state,
            backend: Some("in-process".into()),
            task: None,
            last_activity: Some("2026-11-22T01:02:03.000Z".into()),
            model: None,
            subagents: None,
            turn_started: None,
            thinking: false,
        }
    }

    fn task(id: &str, status: &str, owner: &str, subject: &str) -> TaskRow {
        TaskRow {
            id: id.into(),
            status: status.into(),
            owner: Some(owner.into()),
            blocked_by: vec![],
            subject: subject.into(),
        }
    }

    fn board() -> Board {
        Board {
            team: "demo".into(),
            description: Some("a test team".into()),
            lead: "team-lead".into(),
            teammates: vec![MateRow {
                task: Some(("2".into(), "Write the docs".into())),
                ..mate("alice", MemberState::AwaitingApproval)
            }],
            tasks: vec![
                task("1", "completed", "alice", "Read the code"),
                task("2", "in_progress", "alice", "Write the docs"),
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
            routing: Default::default(),
        }
    }

    /// A team as the issue saw it cut at 80×24: long states, long subjects.
    fn busy_board() -> Board {
        let started = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000 - 62);
        let mut b = board();
        b.teammates = vec![
            MateRow {
                task: Some(("2".into(), "Writing down the river story".into())),
                ..mate("alice", MemberState::AwaitingApproval)
            },
            MateRow {
                task: Some(("3".into(), "Counting every word of chapter one".into())),
                turn_started: Some(started),
                thinking: true,
                model: Some("thinking… (3 calls, $0.0123)".into()),
                ..mate("bob", MemberState::Active)
            },
            mate("py-checker", MemberState::Compiling),
        ];
        b.tasks = vec![
            task("1", "completed", "alice", "Read the code"),
            task(
                "2",
                "in_progress",
                "alice",
                "Write down the river story in the shared notes",
            ),
            task(
                "3",
                "in_progress",
                "bob",
                "Count every word of chapter one and report the total",
            ),
            TaskRow {
                blocked_by: vec!["2".into(), "3".into()],
                ..task(
                    "4",
                    "pending",
                    "py-checker",
                    "Summarise the counts for the lead",
                )
            },
        ];
        b
    }

    /// The words of `text`, as the screen shows them between borders.
    fn words(screen: &str) -> Vec<&str> {
        screen
            .split(|c: char| c.is_whitespace() || "│─┌┐└┘├┤".contains(c))
            .filter(|w| !w.is_empty())
            .collect()
    }

    fn assert_whole(screen: &str, b: &Board) {
        let shown = words(screen);
        for m in &b.teammates {
            let line = screen
                .lines()
                .find(|l| words(l).first() == Some(&m.name.as_str()))
                .unwrap_or_else(|| panic!("no row for {}:\n{screen}", m.name));
            let waits = waits_for(b, &m.name);
            assert!(
                line.contains(state_word_for(&m.state, true, waits))
                    || line.contains(m.state.word()),
                "{}'s state is cut:\n{screen}",
                m.name
            );
        }
        for t in &b.tasks {
            for w in t.subject.split(' ') {
                assert!(
                    shown.contains(&w),
                    "task #{}'s subject lost {w:?}:\n{screen}",
                    t.id
                );
            }
        }
        for key in ["? help", "q quit", "a approve", "d deny"] {
            assert!(screen.contains(key), "the keys bar lost {key:?}:\n{screen}");
        }
    }

    #[test]
    fn each_request_shows_whom_it_waits_for_and_the_title_the_last_decision() {
        use super::super::routing::WaitsFor;
        let mut b = board();
        b.routing.waits_for.insert(
            "plan_approval-1@alice@demo".into(),
            WaitsFor::Escalated {
                by: crate::approvals::Decider::Lead,
            },
        );
        b.routing.last_decision = Some("Bash from bob: denied by the policy".into());
        let s = screen(&b, &Ui::default());
        assert!(
            s.contains("[escalated by the lead: waiting for you]"),
            "{s}"
        );
        assert!(
            s.contains("last: Bash from bob: denied by the policy"),
            "{s}"
        );
        b.routing
            .waits_for
            .insert("plan_approval-1@alice@demo".into(), WaitsFor::Lead);
        let s = screen(&b, &Ui::default());
        assert!(s.contains("[for the lead (you may answer)]"), "{s}");
    }

    #[test]
    fn at_80_by_24_no_state_subject_or_key_is_cut() {
        let b = busy_board();
        let s = screen_at(80, 24, &b, &Ui::default(), None);
        assert_whole(&s, &b);
        assert!(s.contains("1m02s"), "the turn's elapsed time:\n{s}");
        assert!(
            s.contains(SPINNER[0]),
            "a spinner for the busy teammates:\n{s}"
        );
    }

    #[test]
    fn at_60_columns_states_take_their_short_words_and_nothing_is_cut() {
        let mut b = busy_board();
        b.tasks.truncate(3);
        let s = screen_at(60, 24, &b, &Ui::default(), None);
        assert_whole(&s, &b);
        // Without routes the view cannot tell whom alice's request waits
        // for; with them, its short word says.
        assert!(s.contains("awaiting") && !s.contains("asks you"), "{s}");
        let id = b.pending[0].request_id.clone();
        for (waits, word) in [
            (crate::view::routing::WaitsFor::You, "asks you"),
            (crate::view::routing::WaitsFor::Lead, "asks lead"),
        ] {
            b.routing.waits_for.insert(id.clone(), waits);
            let s = screen_at(60, 24, &b, &Ui::default(), None);
            assert_whole(&s, &b);
            assert!(s.contains(word), "{word}:\n{s}");
        }
    }

    #[test]
    fn at_120_by_36_states_are_whole_words_and_nothing_is_cut() {
        let b = busy_board();
        let s = screen_at(120, 36, &b, &Ui::default(), None);
        assert_whole(&s, &b);
        assert!(s.contains("awaiting approval"), "{s}");
    }

    #[test]
    fn a_note_does_not_push_the_keys_off_the_screen() {
        let b = busy_board();
        let ui = Ui {
            note: Some("allowed perm-1 and applied its 1 suggestion(s)".into()),
            ..Ui::default()
        };
        let s = screen_at(80, 24, &b, &ui, None);
        assert!(s.contains("allowed perm-1") && s.contains("q quit"), "{s}");
    }

    #[test]
    fn the_help_lists_every_key_at_80_by_24() {
        let ui = Ui {
            screen: Screen::Help,
            ..Ui::default()
        };
        let s = screen_at(80, 24, &busy_board(), &ui, None);
        for (_, keys, what) in crate::view::keys::HELP {
            assert!(s.contains(keys) && s.contains(what), "{keys}: {s}");
        }
        assert!(s.contains("any key back"), "{s}");
    }

    #[test]
    fn a_teammates_detail_shows_its_turns_tools_and_log() {
        let ui = Ui {
            screen: Screen::Detail("bob".into()),
            ..Ui::default()
        };
        let d = Detail {
            name: "bob".into(),
            turn: Some((
                "01:02:03 team-lead: count chapter one".into(),
                Some(SystemTime::UNIX_EPOCH + Duration::from_secs(990)),
            )),
            turns: vec!["01:00:00 team-lead: hello".into()],
            tools: vec![r#"Read {"path":"one.txt"}"#.into()],
            log: (0..100).map(|i| format!("log line {i}")).collect(),
            log_path: Some("/h/logs/demo/bob.log".into()),
            network: Some("reached pkgs.test:443 ×2; refused nothing".into()),
            problems: vec![],
        };
        let s = screen_at(80, 24, &busy_board(), &ui, Some(&d));
        for want in [
            "teammate bob",
            "state: active",
            "turn now (10s): 01:02:03 team-lead: count chapter one",
            "01:00:00 team-lead: hello",
            r#"Read {"path":"one.txt"}"#,
            "network: reached pkgs.test:443 ×2; refused nothing",
            "log /h/logs/demo/bob.log",
            "log line 99",
            "Esc back",
        ] {
            assert!(s.contains(want), "{want:?} missing from\n{s}");
        }
        assert!(!s.contains("log line 0\n"), "only the tail fits:\n{s}");

        // Scrolled back: older lines, the title says how far; never past
        // the first line.
        let back = Ui {
            detail_back: 50,
            ..ui.clone()
        };
        let s = screen_at(80, 24, &busy_board(), &back, Some(&d));
        assert!(s.contains("50 line(s) back from the end"), "{s}");
        assert!(
            s.contains("log line 49 ") && !s.contains("log line 99"),
            "{s}"
        );
        let far = Ui {
            detail_back: 10_000,
            ..ui
        };
        let s = screen_at(80, 24, &busy_board(), &far, Some(&d));
        assert!(
            s.contains("log line 0 ") && !s.contains("log line 99"),
            "{s}"
        );
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
        b.teammates[0].state = MemberState::Failed("broke its memory limit (64 MiB)".into());
        let s = screen(&b, &Ui::default());
        assert!(s.contains("broke its memory limit"), "{s}");
    }

    #[test]
    fn the_request_screen_shows_the_whole_plan() {
        let ui = Ui {
            screen: Screen::Request("plan_approval-1@alice@demo".into()),
            ..Ui::default()
        };
        for (w, h) in [(140, 40), (80, 24)] {
            let s = screen_at(w, h, &board(), &ui, None);
            assert!(s.contains("step two"), "{s}");
            assert!(s.contains("plan_approval-1@alice@demo"), "{s}");
            assert!(s.contains("Esc back"), "{s}");
        }
    }

    #[test]
    fn a_hundred_teammates_scroll_and_say_how_many() {
        let mut b = board();
        b.teammates = (0..100)
            .map(|i| MateRow {
                name: format!("mate-{i:03}"),
                state: MemberState::Idle,
                ..b.teammates[0].clone()
            })
            .collect();
        let ui = Ui {
            mates_offset: 50,
            mate: 50,
            ..Ui::default()
        };
        let s = screen(&b, &ui);
        assert!(s.contains("of 100"), "{s}");
        assert!(s.contains("mate-050") && !s.contains("mate-049"), "{s}");
    }

    #[test]
    fn the_chosen_request_is_scrolled_into_sight_on_a_short_terminal() {
        let mut b = board();
        b.pending = (0..6)
            .map(|i| PendingView {
                request_id: format!("perm-{i}"),
                what: format!("Write file-{i}"),
                ..b.pending[0].clone()
            })
            .collect();
        let ui = Ui {
            selected: 5,
            ..Ui::default()
        };
        let s = screen_at(80, 24, &b, &ui, None);
        assert!(s.contains("▶ alice plan asks: Write file-5"), "{s}");
    }

    #[test]
    fn the_chosen_teammate_is_scrolled_into_sight() {
        let mut b = board();
        b.teammates = (0..100)
            .map(|i| mate(&format!("mate-{i:03}"), MemberState::Idle))
            .collect();
        let ui = Ui {
            mate: 70,
            focus: Focus::Teammates,
            ..Ui::default()
        };
        let s = screen_at(80, 24, &b, &ui, None);
        assert!(s.contains("mate-070"), "{s}");
    }
}
