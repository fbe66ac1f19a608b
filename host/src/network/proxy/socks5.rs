//! SOCKS5 through the proxy (RFC 1928), for TCP that is not HTTP: no
//! authentication, `CONNECT` only. `BIND` and `UDP ASSOCIATE` are refused
//! (`command not supported`), as is any address type but IPv4, a name and
//! IPv6. A name is parsed as [`Target`] parses hosts, so a SOCKS client
//! that sends `127.1` as a name reaches the rule for `127.0.0.1`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Client, Proxy, Slot};
use crate::network::target::{Host, Target};

/// Replies (RFC 1928, section 6).
const SUCCEEDED: u8 = 0;
const NOT_ALLOWED: u8 = 2;
const HOST_UNREACHABLE: u8 = 4;
const COMMAND_NOT_SUPPORTED: u8 = 7;
const ADDRESS_NOT_SUPPORTED: u8 = 8;

impl Proxy {
    /// Serves one SOCKS5 client whose version byte was read.
    pub(super) async fn socks5(
        &self,
        client: &mut impl Client,
        slot: &mut Slot,
    ) -> Result<(), String> {
        let wait = self.limits.request_timeout;
        let request = match tokio::time::timeout(wait, self.socks5_request(client)).await {
            Ok(r) => r?,
            Err(_) => return Err(format!("the SOCKS5 request did not come within {wait:?}")),
        };
        let Some((command, host, port)) = request else {
            return Err("no acceptable method".into());
        };
        self.socks5_connect(client, slot, command, host, port).await
    }

    /// The greeting and the request: `(command, host, port)`, or `None`
    /// when the client offers no method this proxy serves (it is told).
    async fn socks5_request(
        &self,
        client: &mut impl Client,
    ) -> Result<Option<(u8, Result<Host, String>, u16)>, String> {
        let io = |e: std::io::Error| e.to_string();
        let n = client.read_u8().await.map_err(io)?;
        let mut methods = vec![0u8; n as usize];
        client.read_exact(&mut methods).await.map_err(io)?;
        if !methods.contains(&0) {
            let _ = client.write_all(&[5, 0xff]).await;
            self.note_refused(
                "(socks5)",
                "the client offers no method without authentication",
            );
            return Ok(None);
        }
        client.write_all(&[5, 0]).await.map_err(io)?;
        let mut req = [0u8; 4];
        client.read_exact(&mut req).await.map_err(io)?;
        let [version, command, _, kind] = req;
        if version != 5 {
            return Err(format!("SOCKS version {version} in a SOCKS5 request"));
        }
        let host = match kind {
            1 => {
                let mut a = [0u8; 4];
                client.read_exact(&mut a).await.map_err(io)?;
                Ok(Host::Ip(IpAddr::V4(Ipv4Addr::from(a))))
            }
            4 => {
                let mut a = [0u8; 16];
                client.read_exact(&mut a).await.map_err(io)?;
                Ok(Host::Ip(IpAddr::V6(Ipv6Addr::from(a))))
            }
            3 => {
                let len = client.read_u8().await.map_err(io)?;
                let mut name = vec![0u8; len as usize];
                client.read_exact(&mut name).await.map_err(io)?;
                String::from_utf8(name)
                    .map_err(|_| "the name is not UTF-8".to_string())
                    .and_then(|n| Host::parse(&n))
            }
            other => Err(format!("address type {other}")),
        };
        let port = client.read_u16().await.map_err(io)?;
        Ok(Some((command, host, port)))
    }

    /// Serves a read request: `CONNECT` only, the target held to the rules.
    async fn socks5_connect(
        &self,
        client: &mut impl Client,
        slot: &mut Slot,
        command: u8,
        host: Result<Host, String>,
        port: u16,
    ) -> Result<(), String> {
        if command != 1 {
            self.note_refused(
                "(socks5)",
                &format!("command {command}: only CONNECT is served"),
            );
            return self.reply(client, slot, COMMAND_NOT_SUPPORTED).await;
        }
        let target = match host.and_then(|h| match port {
            0 => Err("port 0 is no port".to_string()),
            _ => Ok(Target { host: h, port }),
        }) {
            Ok(t) => t,
            Err(why) => {
                self.note_refused("(socks5)", &why);
                return self.reply(client, slot, ADDRESS_NOT_SUPPORTED).await;
            }
        };
        let addrs = match self.admit(&target).await {
            Ok(a) => a,
            Err(why) => {
                self.note_refused(&target.to_string(), &why);
                return self.reply(client, slot, NOT_ALLOWED).await;
            }
        };
        let server = match self.connect(&target, &addrs).await {
            Ok(s) => s,
            Err(why) => {
                self.note_refused(&target.to_string(), &why);
                return self.reply(client, slot, HOST_UNREACHABLE).await;
            }
        };
        self.reply(client, slot, SUCCEEDED).await?;
        self.relay(client, server).await
    }

    /// Sends reply `code` with a zero bound address; `Err` unless it is
    /// success (the connection ends there).
    async fn reply(
        &self,
        client: &mut impl Client,
        slot: &mut Slot,
        code: u8,
    ) -> Result<(), String> {
        if code != SUCCEEDED {
            // The slot is free before the client can see the answer.
            slot.take();
        }
        client
            .write_all(&[5, code, 0, 1, 0, 0, 0, 0, 0, 0])
            .await
            .map_err(|e| e.to_string())?;
        match code {
            SUCCEEDED => Ok(()),
            _ => Err(format!("SOCKS5 reply {code}")),
        }
    }
}
