//! How many servers keep a copy of each stream this store makes: asked in
//! the URL, else 3 on a cluster, else 1, and never more than 1 on a server
//! whose replicated streams do not serialise compare-and-swap.

/// The first nats-server whose replicated streams serialise
/// compare-and-swap (`Nats-Expected-Last-Subject-Sequence`): before it, two
/// concurrent writes expecting one revision could both be stored on a
/// clustered stream (nats-io/nats-server#4320, fixed in 2.9.21).
pub(super) const SAFE_REPLICATED_CAS: (u64, u64, u64) = (2, 9, 21);

/// How many replicas this store gives the streams it makes: `asked` (the
/// URL's `?replicas=N`), else 3 on a cluster, else 1 — but never more than
/// 1 on a server older than [`SAFE_REPLICATED_CAS`] (`version` is its
/// INFO's): asked for, that is an error saying what to do; by default, 1.
pub(super) fn replicas(
    asked: Option<usize>,
    clustered: bool,
    version: &str,
) -> Result<usize, String> {
    let safe = replicated_cas_safe(version);
    let (major, minor, patch) = SAFE_REPLICATED_CAS;
    match (asked, clustered) {
        (Some(n), _) if n > 1 && !safe => Err(format!(
            "the store URL asks for {n} replicas, but nats-server {version} does not serialise compare-and-swap on replicated streams (two claimers could both win a task: nats-io/nats-server#4320, fixed in {major}.{minor}.{patch}); upgrade the servers to {major}.{minor}.{patch} or newer, or use ?replicas=1"
        )),
        (Some(n), _) => Ok(n),
        (None, true) if safe => Ok(3),
        (None, true) => {
            tracing::warn!(
                server = version,
                "the team's streams get 1 replica, not 3: nats-server {version} does not serialise compare-and-swap on replicated streams (nats-io/nats-server#4320); upgrade the cluster to {major}.{minor}.{patch} or newer so a team survives losing a node"
            );
            Ok(1)
        }
        (None, false) => Ok(1),
    }
}

/// Whether nats-server `version` serialises compare-and-swap on
/// replicated streams ([`SAFE_REPLICATED_CAS`]): what a cluster needs for
/// its teams to get more than one replica. `false` for a version that does
/// not parse.
pub fn replicated_cas_safe(version: &str) -> bool {
    parse_version(version).is_some_and(|v| v >= SAFE_REPLICATED_CAS)
}

/// `(major, minor, patch)` of a server version such as `2.9.10` or
/// `2.11.0-beta.2`.
fn parse_version(v: &str) -> Option<(u64, u64, u64)> {
    let mut parts = v.trim_start_matches('v').splitn(3, '.');
    let mut next = || -> Option<u64> {
        let p = parts.next()?;
        p[..p.find(|c: char| !c.is_ascii_digit()).unwrap_or(p.len())]
            .parse()
            .ok()
    };
    Some((next()?, next()?, next()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replicas_are_asked_or_three_on_a_cluster_or_one() {
        assert_eq!(replicas(None, false, "2.15.1"), Ok(1));
        assert_eq!(replicas(None, true, "2.15.1"), Ok(3));
        assert_eq!(replicas(None, true, "2.9.21"), Ok(3));
        assert_eq!(replicas(Some(2), true, "2.10.0"), Ok(2));
        assert_eq!(replicas(Some(5), false, "2.11.0-beta.2"), Ok(5));
    }

    #[test]
    fn servers_before_2_9_21_get_one_replica_and_asking_for_more_is_an_error() {
        assert_eq!(replicas(None, true, "2.9.10"), Ok(1));
        assert_eq!(replicas(Some(1), true, "2.9.10"), Ok(1));
        let err = replicas(Some(3), true, "2.9.10").unwrap_err();
        assert!(err.contains("nats-server 2.9.10"), "{err}");
        assert!(err.contains("2.9.21 or newer, or use ?replicas=1"), "{err}");
        assert!(replicas(Some(3), true, "garbage").is_err());
        assert_eq!(parse_version("v2.10.3"), Some((2, 10, 3)));
    }
}
