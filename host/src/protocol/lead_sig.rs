//! Signed lead entries: the scheme Claude Code 2.1.332 uses so that a pane
//! teammate can tell its lead's inbox entries from entries anyone else
//! wrote under the lead's name. Pure functions and keys; nothing here reads
//! or writes an inbox (the store's [`LeadGuard`](crate::store::LeadGuard)
//! applies it to entries).
//!
//! | piece | what |
//! |---|---|
//! | key | Ed25519, one pair per teammate launch; the private half stays in the launching lead's memory |
//! | `--lead-verify-key` | `<ms>.<b64url>`: the launch time (Unix ms) and the public key as DER SubjectPublicKeyInfo (`302a300506032b6570032100` + 32 bytes), base64url without padding |
//! | signed bytes | UTF-8 of `JSON.stringify(["claude-team-lead-entry-v1", msg_id, from, timestamp, text, summary ?? null, color ?? null, from_plugin ?? null])` ([`signed_bytes`]) |
//! | `lead_sig` | the 64-byte signature, base64url without padding (86 characters), the entry's last key |
//! | signed senders | `team-lead`, `user`, `system` ([`LEAD_SENDERS`]) |
//! | window | `T0` = the teammate's start; entries stamped before `T0 - 120 s` (when `T0 <= keyTime + 120 s`) or before `T0` (otherwise) are refused ([`earliest_accepted_ms`]) |
//!
//! teamhost adds one scheme of its own, for teammates that get no key on a
//! command line (in-process teammates, on the lead's host or another): a
//! **team key**, one per team, whose public half the team's `config.json`
//! publishes. One key signs for every such teammate, so its signature also
//! names the recipient: the array starts with [`TEAM_SIG_CONTEXT`] and ends
//! with the team and the member, both lower-cased ([`Recipient`]), and an
//! entry signed for one teammate does not verify in another's inbox. No
//! Claude Code process verifies these; the reference's bytes are unchanged.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use ed25519_dalek::{Signature, Signer, SigningKey, Verifier, VerifyingKey};
use serde_json::Value;

/// The first element of every signed array: names the scheme and its version.
pub const SIG_CONTEXT: &str = "claude-team-lead-entry-v1";

/// The first element of a team-key signed array ([`Recipient`]).
pub const TEAM_SIG_CONTEXT: &str = "teamhost-team-lead-entry-v1";

/// Senders whose entries a keyed lead signs, and a keyed teammate requires
/// signed.
pub const LEAD_SENDERS: [&str; 3] = ["team-lead", "user", "system"];

/// The entry key the signature goes in.
pub const SIG_FIELD: &str = "lead_sig";

/// How far before the teammate's start a signed entry may be stamped
/// (while the teammate started within this long of its key's making).
pub const REPLAY_WINDOW_MS: i64 = 120_000;

/// DER SubjectPublicKeyInfo prefix of an Ed25519 public key.
const SPKI_PREFIX: [u8; 12] = [
    0x30, 0x2a, 0x30, 0x05, 0x06, 0x03, 0x2b, 0x65, 0x70, 0x03, 0x21, 0x00,
];

/// The fields of an inbox entry the signature covers (`msgV`, `type` and
/// `read` are not covered).
#[derive(Debug, Clone, Copy)]
pub struct SignedFields<'a> {
    /// `msg_id`.
    pub msg_id: &'a str,
    /// `from`.
    pub from: &'a str,
    /// `timestamp`, exactly as stored.
    pub timestamp: &'a str,
    /// `text`.
    pub text: &'a str,
    /// `summary`.
    pub summary: Option<&'a str>,
    /// `color`.
    pub color: Option<&'a str>,
    /// `from_plugin`.
    pub from_plugin: Option<&'a str>,
}

/// Whom a team-key signature is for: the team and the member, as given
/// (lower-cased when signed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recipient<'a> {
    /// The team's name.
    pub team: &'a str,
    /// The member whose inbox the entry goes into.
    pub agent: &'a str,
}

/// The bytes a team key signs for `f` written into `to`'s inbox:
/// [`signed_bytes`]'s array with [`TEAM_SIG_CONTEXT`] first, the team and
/// the member (lower-cased) last.
pub fn team_signed_bytes(f: &SignedFields<'_>, to: Recipient<'_>) -> Vec<u8> {
    let mut array = signed_array(TEAM_SIG_CONTEXT, f);
    array.push(to.team.to_lowercase().into());
    array.push(to.agent.to_lowercase().into());
    serde_json::to_vec(&Value::Array(array)).expect("a JSON array of strings always serialises")
}

/// The bytes a lead signs for `f`: the compact JSON array of the scheme's
/// eight elements. serde_json writes strings as `JSON.stringify` does (raw
/// UTF-8, `\"`, `\\`, `\b\f\n\r\t`, other controls as lower-case `\u00xx`,
/// `/` and U+2028 unescaped), so these are the reference's bytes; the unit
/// tests hold them to bytes Node produced.
pub fn signed_bytes(f: &SignedFields<'_>) -> Vec<u8> {
    let array = Value::Array(signed_array(SIG_CONTEXT, f));
    serde_json::to_vec(&array).expect("a JSON array of strings always serialises")
}

/// `context` and the entry's seven signed fields, in the scheme's order.
fn signed_array(context: &str, f: &SignedFields<'_>) -> Vec<Value> {
    let opt = |v: Option<&str>| v.map_or(Value::Null, |s| Value::String(s.into()));
    vec![
        context.into(),
        f.msg_id.into(),
        f.from.into(),
        f.timestamp.into(),
        f.text.into(),
        opt(f.summary),
        opt(f.color),
        opt(f.from_plugin),
    ]
}

/// Whether `from` is one of [`LEAD_SENDERS`] exactly (the senders a keyed
/// lead signs).
pub fn is_lead_sender(from: &str) -> bool {
    LEAD_SENDERS.contains(&from)
}

/// Whether `from` claims to be the lead: one of [`LEAD_SENDERS`] or
/// `lead_name`, compared without case or surrounding blanks. A keyed
/// teammate treats every such entry that does not verify as forged.
pub fn claims_lead(from: &str, lead_name: &str) -> bool {
    let f = from.trim().to_lowercase();
    LEAD_SENDERS.contains(&f.as_str()) || f == lead_name.trim().to_lowercase()
}

/// A `--lead-verify-key` value that cannot be used, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LeadKeyError {
    /// Not `<digits>.<base64url>`.
    #[error("--lead-verify-key {0:?} is not <unix ms>.<base64url key> (as a Claude Code lead passes it)")]
    Shape(String),
    /// The key part is not an Ed25519 SubjectPublicKeyInfo.
    #[error("--lead-verify-key: the key is not an Ed25519 public key ({0})")]
    Key(String),
}

/// The public half a keyed teammate holds: the key and when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeadVerifyKey {
    /// When the lead made the key (Unix ms), the flag's first part.
    pub key_time_ms: i64,
    key: VerifyingKey,
}

impl LeadVerifyKey {
    /// Parses a `--lead-verify-key` value, `^(\d+)\.([\w-]+)$` as the
    /// reference reads it; the key must be an Ed25519 SPKI.
    pub fn parse(value: &str) -> Result<LeadVerifyKey, LeadKeyError> {
        let shape = || LeadKeyError::Shape(value.to_string());
        let (ms, b64) = value.split_once('.').ok_or_else(shape)?;
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '-';
        if ms.is_empty()
            || !ms.bytes().all(|b| b.is_ascii_digit())
            || b64.is_empty()
            || !b64.chars().all(word)
        {
            return Err(shape());
        }
        let key_time_ms = ms.parse::<i64>().map_err(|_| shape())?;
        let der = URL_SAFE_NO_PAD
            .decode(b64)
            .map_err(|e| LeadKeyError::Key(format!("not base64url: {e}")))?;
        let raw: [u8; 32] = der
            .strip_prefix(&SPKI_PREFIX[..])
            .and_then(|r| r.try_into().ok())
            .ok_or_else(|| {
                LeadKeyError::Key(format!(
                    "{} bytes, want 44: the Ed25519 SPKI prefix 302a300506032b6570032100 and 32 key bytes",
                    der.len()
                ))
            })?;
        let key = VerifyingKey::from_bytes(&raw).map_err(|e| LeadKeyError::Key(e.to_string()))?;
        Ok(LeadVerifyKey { key_time_ms, key })
    }

    /// The flag value for this key: `<key time>.<b64url SPKI>`.
    pub fn flag_value(&self) -> String {
        let mut der = SPKI_PREFIX.to_vec();
        der.extend_from_slice(self.key.as_bytes());
        format!("{}.{}", self.key_time_ms, URL_SAFE_NO_PAD.encode(der))
    }

    /// Whether `sig` (base64url) is this key's signature of `f`.
    pub fn verifies(&self, f: &SignedFields<'_>, sig: &str) -> bool {
        self.verifies_bytes(&signed_bytes(f), sig)
    }

    /// Whether `sig` (base64url) is this team key's signature of `f` for
    /// `to` ([`team_signed_bytes`]).
    pub fn verifies_for(&self, f: &SignedFields<'_>, to: Recipient<'_>, sig: &str) -> bool {
        self.verifies_bytes(&team_signed_bytes(f, to), sig)
    }

    fn verifies_bytes(&self, bytes: &[u8], sig: &str) -> bool {
        let Ok(raw) = URL_SAFE_NO_PAD.decode(sig) else {
            return false;
        };
        let Ok(sig) = Signature::from_slice(&raw) else {
            return false;
        };
        self.key.verify(bytes, &sig).is_ok()
    }
}

/// A lead's private key for one teammate launch. It has no `Serialize`,
/// and `Debug` does not show it; the one way out is [`LeadSigningKey::seed`],
/// for the home's keyring (`home::lead_keys`, a 0600 file no teammate can
/// reach), so that teamhost's own lead commands in other processes sign too.
pub struct LeadSigningKey {
    key: SigningKey,
    public: LeadVerifyKey,
}

impl std::fmt::Debug for LeadSigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeadSigningKey")
            .field("public", &self.public.flag_value())
            .finish_non_exhaustive()
    }
}

impl LeadSigningKey {
    /// A fresh key made now (`key_time_ms`: Unix ms, the flag's first part).
    /// Fails only when the OS has no randomness to give.
    pub fn generate(key_time_ms: i64) -> std::io::Result<LeadSigningKey> {
        let mut seed = [0u8; 32];
        getrandom::getrandom(&mut seed).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(LeadSigningKey::from_seed(&seed, key_time_ms))
    }

    /// The key with this 32-byte seed (RFC 8032's secret key), for tests
    /// with known vectors.
    pub fn from_seed(seed: &[u8; 32], key_time_ms: i64) -> LeadSigningKey {
        let key = SigningKey::from_bytes(seed);
        let public = LeadVerifyKey {
            key_time_ms,
            key: key.verifying_key(),
        };
        LeadSigningKey { key, public }
    }

    /// The 32-byte seed (RFC 8032's secret key) [`LeadSigningKey::from_seed`]
    /// makes this key again from. Secret: only for the home's keyring.
    pub fn seed(&self) -> [u8; 32] {
        self.key.to_bytes()
    }

    /// Its public half, as a teammate holds it.
    pub fn verify_key(&self) -> &LeadVerifyKey {
        &self.public
    }

    /// `lead_sig` for `f`: the signature of [`signed_bytes`], base64url
    /// without padding.
    pub fn sign(&self, f: &SignedFields<'_>) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(&signed_bytes(f)).to_bytes())
    }

    /// `lead_sig` for `f` under a team key, for `to` only: the signature
    /// of [`team_signed_bytes`].
    pub fn sign_for(&self, f: &SignedFields<'_>, to: Recipient<'_>) -> String {
        URL_SAFE_NO_PAD.encode(self.key.sign(&team_signed_bytes(f, to)).to_bytes())
    }
}

/// The earliest `timestamp` (Unix ms) a teammate that started at
/// `start_ms` accepts from a lead whose key was made at `key_time_ms`: a
/// teammate started within [`REPLAY_WINDOW_MS`] of the key accepts entries
/// up to that long before its start (the spawn prompt is written before
/// the teammate runs); one started later (a re-run of an old command line)
/// only entries from its own start on.
pub fn earliest_accepted_ms(start_ms: i64, key_time_ms: i64) -> i64 {
    if start_ms <= key_time_ms + REPLAY_WINDOW_MS {
        start_ms - REPLAY_WINDOW_MS
    } else {
        start_ms
    }
}

/// How a keyed teammate classes one lead-named entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Signed by the lead's key, fresh, within the window.
    Verified,
    /// Claims the lead but does not verify; the reason, for the log.
    Forged(String),
    /// Not from a lead name, or no key held: taken as it is.
    Unverifiable,
}

/// Classes an entry for a teammate holding `key` (`None`: launched without
/// `--lead-verify-key`, everything is [`Verdict::Unverifiable`]).
/// `spent(msg_id)` says whether that id was already consumed (a replay);
/// `earliest_ms` is [`earliest_accepted_ms`]. Entries that do not claim the
/// lead ([`claims_lead`]) are unverifiable whatever their signature.
pub fn classify(
    key: Option<&LeadVerifyKey>,
    lead_name: &str,
    f: &SignedFields<'_>,
    sig: Option<&str>,
    spent: impl FnOnce(&str) -> bool,
    earliest_ms: i64,
) -> Verdict {
    let Some(key) = key else {
        return Verdict::Unverifiable;
    };
    let check = SigCheck::Launch(key);
    classify_with(check, lead_name, f, sig, spent, earliest_ms)
}

/// Which key checks a signature, and over which bytes.
#[derive(Debug, Clone, Copy)]
pub enum SigCheck<'a> {
    /// The launch key a teammate was started with: the reference's bytes.
    Launch(&'a LeadVerifyKey),
    /// The team's key: [`team_signed_bytes`] for this recipient.
    Team(&'a LeadVerifyKey, Recipient<'a>),
    /// A signature the caller verified before over the very same bytes
    /// (its own cache): every other rule still applies.
    Known,
}

impl SigCheck<'_> {
    fn verifies(&self, f: &SignedFields<'_>, sig: &str) -> bool {
        match self {
            SigCheck::Launch(k) => k.verifies(f, sig),
            SigCheck::Team(k, to) => k.verifies_for(f, *to, sig),
            SigCheck::Known => true,
        }
    }

    fn name(&self) -> &'static str {
        match self {
            SigCheck::Launch(_) => "the --lead-verify-key key",
            SigCheck::Team(..) | SigCheck::Known => "the team's lead key for this teammate",
        }
    }
}

/// [`classify`] with the key and bytes `check` names.
pub fn classify_with(
    check: SigCheck<'_>,
    lead_name: &str,
    f: &SignedFields<'_>,
    sig: Option<&str>,
    spent: impl FnOnce(&str) -> bool,
    earliest_ms: i64,
) -> Verdict {
    if !claims_lead(f.from, lead_name) {
        return Verdict::Unverifiable;
    }
    let forged = |why: &str| Verdict::Forged(why.to_string());
    if !is_lead_sender(f.from) {
        return forged("its sender is not exactly team-lead, user or system");
    }
    let Some(sig) = sig else {
        return forged("it has no lead_sig");
    };
    if f.msg_id.is_empty() {
        return forged("it has no msg_id");
    }
    if spent(f.msg_id) {
        return forged("its msg_id was already delivered (a replay)");
    }
    match super::time::parse_timestamp(f.timestamp).map(|t| t.timestamp_millis()) {
        None => return forged("its timestamp is not an ISO 8601 time"),
        Some(at) if at < earliest_ms => {
            return forged("it was stamped before this teammate's window (an old entry replayed)")
        }
        Some(_) => {}
    }
    if !check.verifies(f, sig) {
        return Verdict::Forged(format!(
            "its lead_sig does not verify with {}",
            check.name()
        ));
    }
    Verdict::Verified
}

/// Hex SHA-256 of `planContent`: a 2.1.332 lead's `planDigest`.
pub fn plan_digest(plan_content: &str) -> String {
    hex_sha256(plan_content.as_bytes())
}

/// Hex SHA-256 of `tool_name`, a NUL, and `input` as compact JSON with
/// every object's keys sorted (recursively): a 2.1.332 lead's
/// `approved_request.input_digest`.
pub fn input_digest(tool_name: &str, input: &Value) -> String {
    let mut bytes = tool_name.as_bytes().to_vec();
    bytes.push(0);
    bytes.extend(serde_json::to_vec(&sorted(input)).expect("JSON values serialise"));
    hex_sha256(&bytes)
}

fn sorted(v: &Value) -> Value {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            // JS sorts keys by UTF-16 code units; for the keys tool inputs
            // use (ASCII and the BMP) that is the order of their chars.
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sorted(&m[k])))
                    .collect(),
            )
        }
        Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
        other => other.clone(),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 8032 section 7.1, TEST 1: secret key and public key.
    const RFC8032_SEED: &str = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
    const TEXT: &str = "Review \"a/b\" \\ then\u{2028}next\ttab\nline\u{1}ctl\u{1f} é ✓ </x>";

    fn seed() -> [u8; 32] {
        let v: Vec<u8> = (0..64)
            .step_by(2)
            .map(|i| u8::from_str_radix(&RFC8032_SEED[i..i + 2], 16).unwrap())
            .collect();
        v.try_into().unwrap()
    }

    fn entry() -> SignedFields<'static> {
        SignedFields {
            msg_id: "7b0e6f4e-0c1a-4d3e-9f2a-1c2d3e4f5a6b",
            from: "team-lead",
            timestamp: "2026-11-28T22:00:00.000Z",
            text: TEXT,
            summary: Some("review"),
            color: None,
            from_plugin: None,
        }
    }

    // The expected values below were made with Node 20, independently of
    // this code:
    //   const priv = crypto.createPrivateKey({key: Buffer.concat([
    //     Buffer.from('302e020100300506032b657004220420','hex'), seed]),
    //     format:'der', type:'pkcs8'});
    //   const s = JSON.stringify(["claude-team-lead-entry-v1", msg_id, from,
    //     timestamp, text, summary, null, null]);
    //   crypto.sign(null, Buffer.from(s,'utf8'), priv).toString('base64url')
    // and crypto.createPublicKey(priv).export({format:'der',type:'spki'})
    // .toString('base64url') for the flag's key.

    #[test]
    fn signed_bytes_are_json_stringify_of_the_eight_elements() {
        let want = "[\"claude-team-lead-entry-v1\",\"7b0e6f4e-0c1a-4d3e-9f2a-1c2d3e4f5a6b\",\"team-lead\",\"2026-11-28T22:00:00.000Z\",\"Review \\\"a/b\\\" \\\\ then\u{2028}next\\ttab\\nline\\u0001ctl\\u001f é ✓ </x>\",\"review\",null,null]";
        assert_eq!(String::from_utf8(signed_bytes(&entry())).unwrap(), want);
        // Node's hex of the same bytes (U+2028 raw as e2 80 a8).
        let node_hex = "5b22636c617564652d7465616d2d6c6561642d656e7472792d7631222c2237623065366634652d306331612d346433652d396632612d316332643365346635613662222c227465616d2d6c656164222c22323032362d31312d32385432323a30303a30302e3030305a222c22526576696577205c22612f625c22205c5c207468656ee280a86e6578745c747461625c6e6c696e655c753030303163746c5c753030316620c3a920e29c93203c2f783e222c22726576696577222c6e756c6c2c6e756c6c5d";
        let ours: String = signed_bytes(&entry())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(ours, node_hex);
    }

    #[test]
    fn the_rfc8032_key_signs_a_known_entry_as_node_does() {
        let key = LeadSigningKey::from_seed(&seed(), 1_795_000_000_000);
        assert_eq!(
            key.sign(&entry()),
            "bHtYLeoWoNBL80hf8hsQKEsVvIH6yDxrBHeIMcGYOOC4zMkfkQOsKZ7992smIg5osgowv9Uo_P3xzXCVAaiwAA"
        );
        let other = SignedFields {
            msg_id: "m-2",
            from: "user",
            timestamp: "2026-11-28T22:00:01.000Z",
            text: "hi",
            summary: None,
            color: Some("blue"),
            from_plugin: Some("hook-x"),
        };
        assert_eq!(
            key.sign(&other),
            "RlUDoNE8ssMygs7ouYMi944JMvV-bbVJWBjclkBpZGGX_eWrMSnx328ttEvWP-TAKK-JgrIKHEI7zsQ0zCeZAQ"
        );
        assert_eq!(
            key.verify_key().flag_value(),
            "1795000000000.MCowBQYDK2VwAyEA11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"
        );
    }

    #[test]
    fn a_flag_value_parses_back_and_verifies_its_signatures_only() {
        let key = LeadSigningKey::from_seed(&seed(), 5);
        let parsed =
            LeadVerifyKey::parse("5.MCowBQYDK2VwAyEA11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
                .unwrap();
        assert_eq!(&parsed, key.verify_key());
        let sig = key.sign(&entry());
        assert!(parsed.verifies(&entry(), &sig));
        let altered = SignedFields {
            text: "Review",
            ..entry()
        };
        assert!(!parsed.verifies(&altered, &sig));
        assert!(!parsed.verifies(&entry(), "not-a-signature"));
    }

    #[test]
    fn malformed_flag_values_say_what_is_wrong() {
        for bad in ["", "12", "x.abc", "12.", "12.a+b", "12.abc"] {
            let err = LeadVerifyKey::parse(bad).unwrap_err().to_string();
            assert!(err.contains("--lead-verify-key"), "{bad}: {err}");
        }
        // An RSA-sized blob is not an Ed25519 key.
        let err =
            LeadVerifyKey::parse(&format!("1.{}", URL_SAFE_NO_PAD.encode([7u8; 44]))).unwrap_err();
        assert!(matches!(err, LeadKeyError::Key(_)), "{err}");
    }

    #[test]
    fn classify_refuses_unsigned_altered_replayed_and_stale_lead_entries() {
        let key = LeadSigningKey::from_seed(&seed(), 0);
        let vk = Some(key.verify_key());
        let sig = key.sign(&entry());
        let at = super::super::time::parse_timestamp(entry().timestamp)
            .unwrap()
            .timestamp_millis();
        let ok = classify(vk, "team-lead", &entry(), Some(&sig), |_| false, at);
        assert_eq!(ok, Verdict::Verified);
        let unsigned = classify(vk, "team-lead", &entry(), None, |_| false, at);
        assert!(matches!(unsigned, Verdict::Forged(ref w) if w.contains("no lead_sig")));
        let replay = classify(vk, "team-lead", &entry(), Some(&sig), |_| true, at);
        assert!(matches!(replay, Verdict::Forged(ref w) if w.contains("replay")));
        let stale = classify(vk, "team-lead", &entry(), Some(&sig), |_| false, at + 1);
        assert!(matches!(stale, Verdict::Forged(ref w) if w.contains("before")));
        let upper = SignedFields {
            from: "Team-Lead",
            ..entry()
        };
        let case = classify(vk, "team-lead", &upper, Some(&sig), |_| false, at);
        assert!(matches!(case, Verdict::Forged(_)));
        let peer = SignedFields {
            from: "worker",
            ..entry()
        };
        assert_eq!(
            classify(vk, "team-lead", &peer, None, |_| false, at),
            Verdict::Unverifiable
        );
        assert_eq!(
            classify(None, "team-lead", &entry(), None, |_| false, at),
            Verdict::Unverifiable
        );
    }

    #[test]
    fn the_window_reaches_back_two_minutes_only_for_a_prompt_launch() {
        assert_eq!(earliest_accepted_ms(1_000_000, 990_000), 880_000);
        assert_eq!(
            earliest_accepted_ms(1_000_000, 1_000_000 - 120_000),
            880_000
        );
        assert_eq!(
            earliest_accepted_ms(1_000_000, 1_000_000 - 120_001),
            1_000_000
        );
    }

    #[test]
    fn digests_are_hex_sha256_with_sorted_keys() {
        // Node: crypto.createHash("sha256").update("plan").digest("hex")
        assert_eq!(
            plan_digest("plan"),
            "64879f7d6b960a01909762d911a32d4582c20010c5641ee90278b644a9e3b525"
        );
        // Node: the same hash over "Bash\0" + JSON.stringify(input with its
        // keys sorted by a recursive Object.keys(v).sort()).
        let input = serde_json::json!({"command": "ls -la", "description": "list", "opts": {"z": 1, "a": [{"y": 2, "b": "é"}]}});
        assert_eq!(
            input_digest("Bash", &input),
            "264c868089310e4564a0b03bdb0090b4a50716fa4371beabde4ac889e86ba668"
        );
        let a = serde_json::json!({"b": 1, "a": {"d": [ {"z": 1, "y": 2} ], "c": "x"}});
        let b = serde_json::json!({"a": {"c": "x", "d": [ {"y": 2, "z": 1} ]}, "b": 1});
        assert_eq!(input_digest("Bash", &a), input_digest("Bash", &b));
        assert_ne!(input_digest("Bash", &a), input_digest("Edit", &a));
    }

    #[test]
    fn a_team_key_signature_is_for_one_recipient_and_never_a_launch_key_s() {
        let key = LeadSigningKey::from_seed(&seed(), 0);
        let a = Recipient {
            team: "Rehearsal",
            agent: "Scribe",
        };
        let sig = key.sign_for(&entry(), a);
        let vk = key.verify_key();
        // Names compare without case; another teammate or team does not
        // verify, nor do the reference's bytes.
        let same = Recipient {
            team: "rehearsal",
            agent: "scribe",
        };
        assert!(vk.verifies_for(&entry(), same, &sig));
        for other in [
            Recipient {
                team: "rehearsal",
                agent: "critic",
            },
            Recipient {
                team: "other",
                agent: "scribe",
            },
        ] {
            assert!(!vk.verifies_for(&entry(), other, &sig), "{other:?}");
        }
        assert!(!vk.verifies(&entry(), &sig), "not a launch-key signature");
        assert!(!vk.verifies_for(&entry(), a, &key.sign(&entry())));
        let spent = |_: &str| false;
        let at = |check| classify_with(check, "team-lead", &entry(), Some(&sig), spent, 0);
        assert_eq!(at(SigCheck::Team(vk, same)), Verdict::Verified);
        let Verdict::Forged(why) = at(SigCheck::Launch(vk)) else {
            panic!("a team signature under a launch key")
        };
        assert!(why.contains("--lead-verify-key"), "{why}");
    }
}
