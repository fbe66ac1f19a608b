//! [`StoreDescription`]: where a NATS store lives and how its teams are
//! kept — the servers named, the one connected to, the replicas new
//! streams get, and each team stream's replicas and leader. What `teamhost
//! store info` shows. Never credentials.

use serde::Serialize;
use serde_json::Value;

use super::{setup, team_streams_prefixes, NatsStore};
use crate::error::Result;

/// A NATS store, described.
#[derive(Debug, Clone, Serialize)]
pub struct StoreDescription {
    /// The URL as shown (no credentials).
    pub store: String,
    /// `HOST:PORT` of every server the URL names.
    pub servers: Vec<String>,
    /// The server this store is connected to: its `server_name`.
    pub connected: String,
    /// Its nats-server version.
    pub version: String,
    /// The cluster it is part of, if any.
    pub cluster: Option<String>,
    /// Replicas of the streams this store makes (`setup.rs`).
    pub replicas: usize,
    /// The streams of this store's prefix.
    pub streams: Vec<StreamDescription>,
}

/// One stream of the store.
#[derive(Debug, Clone, Serialize)]
pub struct StreamDescription {
    /// Its name (`KV_P_TEAM` or `P_mail_TEAM`).
    pub name: String,
    /// How many servers keep it.
    pub replicas: u64,
    /// The server leading it (a replicated stream), if one does now.
    pub leader: Option<String>,
    /// Messages kept.
    pub messages: u64,
}

impl NatsStore {
    /// Describes this store (module docs). Asks the server for each stream
    /// of the prefix.
    pub fn describe(&self) -> Result<StoreDescription> {
        let conn = self.conn();
        let server = conn.client().server_info();
        let mut streams = Vec::new();
        for lead in team_streams_prefixes(self.prefix()) {
            let names =
                setup::stream_names(conn, &lead).map_err(|f| conn.error("list the streams", f))?;
            for name in names {
                let info: Value = setup::info(conn, &name)
                    .map_err(|f| conn.error("describe a stream", f))?
                    .unwrap_or_default();
                streams.push(StreamDescription {
                    replicas: info["config"]["num_replicas"].as_u64().unwrap_or(1),
                    leader: info["cluster"]["leader"].as_str().map(str::to_string),
                    messages: info["state"]["messages"].as_u64().unwrap_or(0),
                    name,
                });
            }
        }
        Ok(StoreDescription {
            store: self.url().display(),
            servers: self.url().servers().to_vec(),
            connected: server.server_name,
            version: server.version,
            cluster: server.cluster,
            replicas: conn.replicas(),
            streams,
        })
    }
}
