//! (being written)
/// Record/replay mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CassetteMode {
    #[default]
    Live,
    Record,
    Replay,
    ReplayLenient,
    ReplayOrRecord,
}
impl std::str::FromStr for CassetteMode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Ok(match s {
            "live" => CassetteMode::Live,
            "record" => CassetteMode::Record,
            "replay" => CassetteMode::Replay,
            "replay-lenient" => CassetteMode::ReplayLenient,
            "replay-or-record" => CassetteMode::ReplayOrRecord,
            _ => return Err(format!("unknown mode {s:?}")),
        })
    }
}
impl std::fmt::Display for CassetteMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}
