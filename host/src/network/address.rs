//! Addresses a teammate may not reach through the proxy unless a rule
//! names the address itself: this machine, the networks it sits in, and the
//! cloud's metadata service.
//!
//! | refused | ranges |
//! |---|---|
//! | this machine | `127.0.0.0/8`, `::1`, `0.0.0.0/8`, `::` |
//! | private networks | `10.0.0.0/8`, `172.16.0.0/12`, `192.168.0.0/16`, `fc00::/7` |
//! | shared address space (carrier NAT) | `100.64.0.0/10` |
//! | link-local, the metadata service (`169.254.169.254`) among them | `169.254.0.0/16`, `fe80::/10` |
//! | multicast and broadcast | `224.0.0.0/4`, `255.255.255.255`, `ff00::/8` |
//! | reserved | `240.0.0.0/4`, `192.0.0.0/24`, `198.18.0.0/15` (benchmarking) |
//!
//! An IPv6 address that carries an IPv4 one is judged by the IPv4 address:
//! IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible (`::a.b.c.d`), NAT64
//! (`64:ff9b::/96`) and 6to4 (`2002:AABB:CCDD::/48`), so
//! `[::ffff:127.0.0.1]` is this machine too.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `addr` is refused unless a rule names it, or `None` when it is a
/// public address.
pub fn refused_class(addr: IpAddr) -> Option<&'static str> {
    match addr {
        IpAddr::V4(a) => refused_v4(a),
        IpAddr::V6(a) => match embedded_v4(a) {
            Some(v4) => refused_v4(v4),
            None => refused_v6(a),
        },
    }
}

fn refused_v4(a: Ipv4Addr) -> Option<&'static str> {
    let [o1, o2, o3, _] = a.octets();
    Some(match (o1, o2, o3) {
        (127, ..) | (0, ..) => "this machine (loopback or unspecified)",
        (10, ..) | (172, 16..=31, _) | (192, 168, _) => "a private network",
        (100, 64..=127, _) => "shared address space (carrier NAT)",
        (169, 254, _) if a == Ipv4Addr::new(169, 254, 169, 254) => "the cloud metadata service",
        (169, 254, _) => "link-local",
        (224..=239, ..) => "multicast",
        (255, 255, 255) => "broadcast",
        (240..=255, ..) => "reserved",
        (192, 0, 0) => "reserved (IETF protocol assignments)",
        (198, 18..=19, _) => "reserved (benchmarking)",
        _ => return None,
    })
}

fn refused_v6(a: Ipv6Addr) -> Option<&'static str> {
    let s = a.segments();
    if a.is_loopback() || a.is_unspecified() {
        return Some("this machine (loopback or unspecified)");
    }
    Some(match s[0] {
        x if x & 0xfe00 == 0xfc00 => "a private network (unique local)",
        x if x & 0xffc0 == 0xfe80 => "link-local",
        x if x & 0xff00 == 0xff00 => "multicast",
        _ => return None,
    })
}

/// The IPv4 address an IPv6 one carries: mapped, compatible, NAT64 or
/// 6to4.
fn embedded_v4(a: Ipv6Addr) -> Option<Ipv4Addr> {
    if let Some(v4) = a.to_ipv4_mapped() {
        return Some(v4);
    }
    let s = a.segments();
    let low =
        |hi: u16, lo: u16| Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8);
    match s {
        // ::a.b.c.d (deprecated, still routed by some stacks); not :: or ::1
        [0, 0, 0, 0, 0, 0, hi, lo] if hi != 0 => Some(low(hi, lo)),
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => Some(low(hi, lo)),
        [0x2002, hi, lo, ..] => Some(low(hi, lo)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(s: &str) -> Option<&'static str> {
        refused_class(s.parse().unwrap())
    }

    #[test]
    fn this_machine_and_its_networks_are_refused_in_both_families() {
        for a in [
            "127.0.0.1",
            "127.255.0.9",
            "0.0.0.0",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "100.64.0.1",
            "169.254.169.254",
            "169.254.1.1",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::1",
        ] {
            assert!(class(a).is_some(), "{a} passed");
        }
        assert_eq!(class("169.254.169.254"), Some("the cloud metadata service"));
        assert_eq!(
            class("::ffff:169.254.169.254"),
            Some("the cloud metadata service")
        );
    }

    #[test]
    fn public_addresses_pass() {
        for a in [
            "93.184.215.14",
            "172.32.0.1",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(class(a), None, "{a}");
        }
    }
}
