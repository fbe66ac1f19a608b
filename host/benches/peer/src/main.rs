//! A writer or the consumer of the contention bench, through the peer crate
//! `agent-teams` 0.1.0's `FileInboxManager` (flock, read, pretty JSON to a
//! temp file, rename; no fsync).
//!
//! `peer-contention write BASE ID COUNT`: sends COUNT messages from writer ID
//! to `sink` of team `writers` under BASE, one after another, each text
//! `{id}:{n}:{sent µs}`.
//!
//! `peer-contention consume BASE TOTAL`: reads `sink`'s inbox until TOTAL
//! distinct messages were seen, then prints one line: `received lost
//! duplicated p50_us p90_us`. The cheapest consumer the crate allows that
//! loses nothing: it reads the whole inbox every 2 ms and marks nothing read
//! (clearing after a read would lose what was appended in between).
//!
//! `peer-contention consume-marking BASE TOTAL`: the same, consuming as the
//! crate's API means it (`read_unread`, then `mark_read` for each message:
//! one locked rewrite of the whole inbox per message).

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use agent_teams::messaging::{FileInboxManager, InboxManager};
use agent_teams::models::InboxMessage;

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_micros() as u64
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let usage = "usage: peer-contention write BASE ID COUNT | consume BASE TOTAL | consume-marking BASE TOTAL";
    let role = args.get(1).expect(usage).as_str();
    let inbox = FileInboxManager::new(args.get(2).expect(usage));
    match role {
        "write" => {
            let id = &args[3];
            let count: usize = args[4].parse().expect(usage);
            for n in 0..count {
                let text = format!("{id}:{n}:{}", now_us());
                inbox
                    .send_message("writers", InboxMessage::new("team-lead", "sink", text))
                    .await
                    .expect("the peer's send_message");
            }
        }
        "consume" | "consume-marking" => {
            let marking = role == "consume-marking";
            let total: usize = args[3].parse().expect(usage);
            let mut seen = HashSet::new();
            let mut received = 0usize;
            let mut latency = Vec::with_capacity(total);
            while seen.len() < total {
                let new: Vec<InboxMessage> = if marking {
                    inbox
                        .read_unread("writers", "sink")
                        .await
                        .expect("the peer's read_unread")
                } else {
                    let all = inbox
                        .read_inbox("writers", "sink")
                        .await
                        .expect("the peer's read_inbox");
                    all.into_iter().skip(received).collect()
                };
                let now = now_us();
                for m in new {
                    if marking {
                        inbox
                            .mark_read("writers", "sink", &m.id)
                            .await
                            .expect("the peer's mark_read");
                    }
                    received += 1;
                    if let Some(sent) = m
                        .content
                        .rsplit(':')
                        .next()
                        .and_then(|s| s.parse::<u64>().ok())
                    {
                        latency.push(now.saturating_sub(sent));
                    }
                    seen.insert(m.content);
                }
                if seen.len() < total {
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }
            latency.sort_unstable();
            let pick = |q: f64| latency[((latency.len() - 1) as f64 * q) as usize];
            println!(
                "{} {} {} {} {}",
                seen.len(),
                total - seen.len(),
                received - seen.len(),
                pick(0.5),
                pick(0.9)
            );
        }
        _ => panic!("{usage}"),
    }
}
