//! Where a teammate asks to connect: a host, as the programs behind the
//! proxy would read it, and a port.
//!
//! A host is parsed by the WHATWG URL standard's host parser (the `url`
//! crate), the one browsers, curl's URL API and most HTTP stacks follow, so
//! every IPv4 spelling a program accepts is the address it means:
//! `127.1`, `2130706433`, `0x7f000001` and `0177.0.0.1` are all
//! `127.0.0.1`, and `[::ffff:127.0.0.1]` is the IPv6 form of it. A name is
//! lower-cased and turned to its ASCII (punycode) form; a trailing dot is
//! dropped (`example.com.` is `example.com`). Anything the parser refuses
//! (spaces, control characters such as the CR and LF of a header
//! injection, `%`, `/`, `@`) is refused here, before any rule is read.

use std::fmt;
use std::net::IpAddr;

/// The most bytes of a host as written.
const MAX_HOST: usize = 253 + 2;

/// A host: a name or an address.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Host {
    /// A DNS name, lower case ASCII, no trailing dot.
    Name(String),
    /// An address written as one (in any spelling).
    Ip(IpAddr),
}

impl Host {
    /// Parses `text` as a host (an IPv6 address in brackets); `Err` says
    /// why it is refused.
    pub fn parse(text: &str) -> Result<Host, String> {
        if text.is_empty() {
            return Err("the host is empty".into());
        }
        if text.len() > MAX_HOST {
            return Err(format!(
                "the host is {} bytes long (at most {MAX_HOST})",
                text.len()
            ));
        }
        if let Some(c) = text.chars().find(|c| c.is_control() || c.is_whitespace()) {
            return Err(format!(
                "the host holds the character U+{:04X} (a control or a space)",
                c as u32
            ));
        }
        match url::Host::parse(text) {
            Ok(url::Host::Ipv4(a)) => Ok(Host::Ip(IpAddr::V4(a))),
            Ok(url::Host::Ipv6(a)) => Ok(Host::Ip(IpAddr::V6(a))),
            Ok(url::Host::Domain(d)) => {
                let d = d.strip_suffix('.').unwrap_or(&d).to_string();
                if d.is_empty() || d.split('.').any(str::is_empty) {
                    return Err(format!("{text:?} is not a host name (an empty label)"));
                }
                if d.contains(['%', '/', '\\', '@', ':', '*', '?', '#', '[', ']']) {
                    return Err(format!("{text:?} is not a host name"));
                }
                Ok(Host::Name(d))
            }
            Err(e) => Err(format!("{text:?} is not a host: {e}")),
        }
    }
}

impl fmt::Display for Host {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Host::Name(n) => f.write_str(n),
            Host::Ip(IpAddr::V6(a)) => write!(f, "[{a}]"),
            Host::Ip(a) => write!(f, "{a}"),
        }
    }
}

/// A host and a port: what a CONNECT line, an absolute URL or a SOCKS5
/// request names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Target {
    /// The host.
    pub host: Host,
    /// The port.
    pub port: u16,
}

impl Target {
    /// `host` and `port`, the host parsed as [`Host::parse`] does.
    pub fn new(host: &str, port: u16) -> Result<Target, String> {
        if port == 0 {
            return Err("port 0 is no port".into());
        }
        Ok(Target {
            host: Host::parse(host)?,
            port,
        })
    }

    /// Parses an authority `host:port` (`[v6]:port` for IPv6), as a
    /// CONNECT line carries it; the port is required.
    pub fn parse_authority(text: &str) -> Result<Target, String> {
        let (host, port) = match text.strip_prefix('[') {
            Some(rest) => {
                let (v6, after) = rest
                    .split_once(']')
                    .ok_or_else(|| format!("{text:?}: an IPv6 address without its ']'"))?;
                let port = after
                    .strip_prefix(':')
                    .ok_or_else(|| format!("{text:?}: no port"))?;
                (format!("[{v6}]"), port)
            }
            None => {
                let (h, p) = text
                    .rsplit_once(':')
                    .ok_or_else(|| format!("{text:?}: no port (host:port)"))?;
                (h.to_string(), p)
            }
        };
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{text:?}: the port is not a number from 1 to 65535"
            ));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{text:?}: the port is not a number from 1 to 65535"))?;
        Target::new(&host, port)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.host, self.port)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> Host {
        Host::Ip(s.parse().unwrap())
    }

    #[test]
    fn every_ipv4_spelling_is_the_address_it_means() {
        for spelling in [
            "127.0.0.1",
            "127.1",
            "2130706433",
            "0x7f000001",
            "0177.0.0.1",
            "0x7f.1",
            "127.0.0.1.",
        ] {
            assert_eq!(Host::parse(spelling), Ok(ip("127.0.0.1")), "{spelling}");
        }
        assert_eq!(
            Host::parse("[::ffff:127.0.0.1]"),
            Ok(ip("::ffff:127.0.0.1"))
        );
        assert_eq!(Host::parse("[::1]"), Ok(ip("::1")));
    }

    #[test]
    fn names_are_lower_case_ascii_without_the_trailing_dot() {
        assert_eq!(
            Host::parse("Example.COM."),
            Ok(Host::Name("example.com".into()))
        );
        assert_eq!(
            Host::parse("bücher.de"),
            Ok(Host::Name("xn--bcher-kva.de".into()))
        );
    }

    #[test]
    fn what_a_header_injection_or_a_url_trick_needs_is_refused() {
        for bad in [
            "",
            "evil.com\r\nHost: x",
            "evil.com\n",
            "a b",
            "user@evil.com",
            "evil.com/x",
            "evil.com%2f",
            "a..b",
            "*.example.com",
            "[::1",
        ] {
            assert!(Host::parse(bad).is_err(), "{bad:?} was accepted");
        }
    }

    #[test]
    fn an_authority_needs_a_port_in_range() {
        assert_eq!(
            Target::parse_authority("example.com:443")
                .unwrap()
                .to_string(),
            "example.com:443"
        );
        assert_eq!(
            Target::parse_authority("[::1]:8080").unwrap().to_string(),
            "[::1]:8080"
        );
        for bad in [
            "example.com",
            "example.com:",
            "example.com:0",
            "example.com:65536",
            "example.com:+1",
            "[::1]8080",
        ] {
            assert!(Target::parse_authority(bad).is_err(), "{bad:?}");
        }
    }
}
