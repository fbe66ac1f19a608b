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
