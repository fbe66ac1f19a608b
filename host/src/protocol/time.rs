//! The clock as the protocol writes it: epoch milliseconds for request ids and
//! `createdAt`-style numbers, and ISO 8601 timestamps for `timestamp` fields.
//!
//! Timestamps are written exactly as JavaScript's `Date.prototype.toISOString`
//! does, which is what the reference CLI writes: UTC, three fractional digits,
//! `Z` (`2026-11-21T22:24:52.591Z`). Other modules import these helpers as
//! `crate::protocol::time::{now_ms, timestamp_now}`.

use chrono::{DateTime, SecondsFormat, Utc};

/// Milliseconds since the Unix epoch, now (`Date.now()` in the reference).
/// A clock set before 1970 reads as 0.
pub fn now_ms() -> u64 {
    ms_of(Utc::now())
}

/// The current time as a protocol timestamp, e.g. `2026-11-21T22:24:52.591Z`.
pub fn timestamp_now() -> String {
    format_timestamp(Utc::now())
}

/// Formats `at` as a protocol timestamp: UTC, milliseconds (truncated), `Z`.
pub fn format_timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The protocol timestamp of epoch millisecond `ms`, or `None` when `ms` is beyond
/// the range chrono can represent (about 262,000 years).
pub fn timestamp_from_ms(ms: u64) -> Option<String> {
    let ms = i64::try_from(ms).ok()?;
    DateTime::from_timestamp_millis(ms).map(format_timestamp)
}

/// Parses any RFC 3339 timestamp (with or without fractional seconds, any
/// offset) into UTC; `None` when `text` is not one.
pub fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|at| at.with_timezone(&Utc))
}

/// One reading of the clock as both epoch milliseconds and a timestamp, so a
/// request id and its message's `timestamp` name the same millisecond (as in the
/// reference: `shutdown-1770977603516@…` with `10:13:23.516Z`).
pub(crate) fn now_pair() -> (u64, String) {
    let now = Utc::now();
    (ms_of(now), format_timestamp(now))
}

fn ms_of(at: DateTime<Utc>) -> u64 {
    u64::try_from(at.timestamp_millis()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_utc_with_milliseconds_and_z() {
        assert_eq!(
            timestamp_from_ms(1_770_977_603_516).as_deref(),
            Some("2026-02-13T10:13:23.516Z")
        );
        assert_eq!(
            timestamp_from_ms(0).as_deref(),
            Some("1970-01-01T00:00:00.000Z")
        );
        let now = timestamp_now();
        assert_eq!(now.len(), "2026-11-21T22:24:52.591Z".len(), "{now}");
        assert!(now.ends_with('Z'), "{now}");
    }

    #[test]
    fn id_milliseconds_and_timestamp_name_the_same_instant() {
        let (ms, stamp) = now_pair();
        assert_eq!(timestamp_from_ms(ms), Some(stamp));
    }

    #[test]
    fn now_ms_is_after_2020() {
        assert!(now_ms() > 1_577_836_800_000);
    }

    #[test]
    fn parses_timestamps_with_and_without_milliseconds() {
        let with = parse_timestamp("2026-02-13T10:11:35.247Z");
        let without = parse_timestamp("2026-02-13T10:11:35Z");
        assert!(with.is_some() && without.is_some());
        assert_eq!(
            parse_timestamp("2026-02-13T11:11:35+01:00"),
            without,
            "offsets are converted to UTC"
        );
        assert_eq!(parse_timestamp("yesterday"), None);
        assert_eq!(parse_timestamp(""), None);
    }

    #[test]
    fn out_of_range_milliseconds_have_no_timestamp() {
        assert_eq!(timestamp_from_ms(u64::MAX), None);
    }
}
