//! Anthropic's prompt-caching rules, as a model of what its API bills: the
//! fake provider ([`crate::model_server`]) answers with the usage these
//! rules give, and the prompt-cache benchmark counts with them.
//!
//! The rules (Anthropic's documentation on prompt caching):
//!
//! - A request is a sequence of blocks in the order tools → system →
//!   messages; a block marked `cache_control` is a breakpoint, and at most
//!   [`MAX_BREAKPOINTS`] are allowed (more is a 400).
//! - At each breakpoint the API looks for the prefix ending there in its
//!   cache, and at the block boundaries up to [`LOOKBACK`] blocks before
//!   it; the longest prefix found is *read* (billed 0.1× input).
//! - The prefix up to the last breakpoint, beyond what was read, is
//!   *written* (billed 1.25× input), and each breakpoint's prefix is then
//!   cached, but only a prefix of at least the model's minimum
//!   ([`PromptCache::new`]: 1,024 tokens for Sonnet and Opus 4, 4,096 for
//!   Haiku 4.5 and Opus 4.5); a shorter one is neither read nor written.
//! - The rest of the input is billed at the input price.
//!
//! Tokens are counted as a block's JSON characters / 4 (without its
//! `cache_control`), which is what the host estimates too. The cache never
//! expires here (Anthropic's lasts 5 minutes from its last use: longer than
//! any test or the benchmark's conversation).

use std::collections::HashSet;

use serde_json::Value;

/// The most breakpoints one request may carry.
pub const MAX_BREAKPOINTS: usize = 4;

/// How many block boundaries before a breakpoint the API also checks.
pub const LOOKBACK: usize = 20;

/// What one request is billed, in tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheUsage {
    /// Input at the full price.
    pub input: u64,
    /// Read from the cache (0.1×).
    pub read: u64,
    /// Written to the cache (1.25×).
    pub written: u64,
}

impl CacheUsage {
    /// Every input token, however billed.
    pub fn total(&self) -> u64 {
        self.input + self.read + self.written
    }
}

/// One provider's cache: the prefixes written so far.
#[derive(Debug, Clone)]
pub struct PromptCache {
    min_tokens: u64,
    cached: HashSet<u64>,
}

impl PromptCache {
    /// An empty cache caching prefixes of at least `min_tokens`.
    pub fn new(min_tokens: u64) -> PromptCache {
        PromptCache {
            min_tokens,
            cached: HashSet::new(),
        }
    }

    /// Bills `body` (an Anthropic Messages request) and caches what it
    /// writes. `Err` names a rule the request breaks (as the API's 400).
    pub fn bill(&mut self, body: &Value) -> Result<CacheUsage, String> {
        let blocks = blocks(body);
        let breakpoints: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].1).collect();
        if breakpoints.len() > MAX_BREAKPOINTS {
            return Err(format!(
                "A maximum of {MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {}.",
                breakpoints.len()
            ));
        }
        // Running token counts and prefix hashes, per block boundary.
        let mut tokens = Vec::with_capacity(blocks.len());
        let mut hashes = Vec::with_capacity(blocks.len());
        let (mut t, mut h) = (0u64, 0xcbf2_9ce4_8422_2325u64);
        for (text, _) in &blocks {
            t += (text.len() as u64).div_ceil(4);
            h = fnv(h, text.as_bytes());
            tokens.push(t);
            hashes.push(h);
        }
        let total = t;
        let mut read = 0;
        for &b in &breakpoints {
            for i in (b.saturating_sub(LOOKBACK)..=b).rev() {
                if self.cached.contains(&hashes[i]) {
                    read = read.max(tokens[i]);
                    break;
                }
            }
        }
        let mut written = 0;
        if let Some(&last) = breakpoints.last() {
            if tokens[last] >= self.min_tokens && tokens[last] > read {
                written = tokens[last] - read;
            }
            for &b in &breakpoints {
                if tokens[b] >= self.min_tokens {
                    self.cached.insert(hashes[b]);
                }
            }
        }
        Ok(CacheUsage {
            input: total - read - written,
            read,
            written,
        })
    }
}

/// The request's blocks in cache order, each as its JSON without
/// `cache_control`, and whether it is a breakpoint.
fn blocks(body: &Value) -> Vec<(String, bool)> {
    let mut out = Vec::new();
    let mut push = |v: &Value, prefix: &str| {
        let mut v = v.clone();
        let marked = v
            .as_object_mut()
            .is_some_and(|o| o.remove("cache_control").is_some());
        out.push((format!("{prefix}{v}"), marked));
    };
    for t in body["tools"].as_array().into_iter().flatten() {
        push(t, "tool:");
    }
    match &body["system"] {
        // A plain string counts as the one text block it stands for.
        Value::String(s) => push(&serde_json::json!({"type": "text", "text": s}), "system:"),
        Value::Array(a) => a.iter().for_each(|b| push(b, "system:")),
        _ => {}
    }
    for m in body["messages"].as_array().into_iter().flatten() {
        let role = m["role"].as_str().unwrap_or("?");
        match &m["content"] {
            Value::Array(a) => a.iter().for_each(|b| push(b, role)),
            other => push(other, role),
        }
    }
    out
}

fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes.iter().chain(b"\x1f") {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(n_messages: usize, mark_last: bool) -> Value {
        let long = "x".repeat(8_000);
        let mut messages: Vec<Value> = (0..n_messages)
            .map(|i| json!({"role": if i % 2 == 0 {"user"} else {"assistant"}, "content": [{"type": "text", "text": format!("{i} {long}")}]}))
            .collect();
        if mark_last {
            messages.last_mut().unwrap()["content"][0]["cache_control"] =
                json!({"type": "ephemeral"});
        }
        json!({"system": "s", "messages": messages})
    }

    #[test]
    fn a_prefix_is_written_once_then_read() {
        let mut c = PromptCache::new(1024);
        let first = c.bill(&body(1, true)).unwrap();
        assert_eq!((first.read, first.input), (0, 0), "{first:?}");
        assert!(first.written > 2_000, "{first:?}");
        let second = c.bill(&body(3, true)).unwrap();
        assert_eq!(second.read, first.written, "{second:?}");
        assert!(second.written > 4_000 && second.input == 0, "{second:?}");
        let unmarked = c.bill(&body(3, false)).unwrap();
        assert_eq!((unmarked.read, unmarked.written), (0, 0));
    }

    #[test]
    fn a_short_prefix_is_not_cached_and_five_marks_are_refused() {
        let mut c = PromptCache::new(1024);
        let short = json!({"messages": [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]});
        assert_eq!(c.bill(&short).unwrap().written, 0);
        assert_eq!(c.bill(&short).unwrap().read, 0);
        let mark = json!({"type": "ephemeral"});
        let five = json!({"tools": (0..5).map(|i| json!({"name": i, "cache_control": mark})).collect::<Vec<_>>()});
        assert!(c.bill(&five).unwrap_err().contains("maximum of 4"));
    }
}
