//! Hostile test: no piece of the host's model key reaches a guest or a file.
//! The provider (a real HTTP server on loopback) quotes the guest's request
//! and then the key in its error text, as a careless provider or proxy
//! might. The guest pads its request so that the host's cut of the error
//! text falls at every place inside the quoted key; before round three the
//! cut came before the scrub and handed the guest the key's first
//! characters. Now the whole text is scrubbed of every piece of the key
//! eight characters or longer, and only then cut.

use teamhost::model::provider::{self, ApiKey, Dialect, ProviderSettings};
use teamhost::model::{CassetteMode, ModelHub};
use teamhost_tests::model_server::{Api, FakeProvider, Reply};

use crate::common::models;
use crate::sandbox_support::{all, hostile_request, wait_done, Arena};

/// A key long enough that pieces of it are long enough to be useful.
const KEY: &str = "sk-live-Q7vZt3Kp9WmX2bRn5YhJ8dLc4FgT6sNaE1uV";

/// The first piece of the key of eight or more characters in `text`.
fn piece_in(text: &str) -> Option<&'static str> {
    (0..=KEY.len() - 8)
        .map(|i| &KEY[i..i + 8])
        .find(|piece| text.contains(piece))
}

fn every_file(dir: &std::path::Path, out: &mut Vec<(std::path::PathBuf, String)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !path.is_symlink() {
            every_file(&path, out);
        } else if let Ok(bytes) = std::fs::read(&path) {
            out.push((path, String::from_utf8_lossy(&bytes).into_owned()));
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn padding_a_request_until_the_cut_falls_inside_an_echoed_key_yields_no_piece_of_it() {
    for api in [Api::Anthropic, Api::OpenAi] {
        let dialect = match api {
            Api::Anthropic => Dialect::Anthropic,
            Api::OpenAi => Dialect::Openai,
        };
        let server = FakeProvider::always(api, Reply::EchoCredentials(400)).await;
        let hub = ModelHub::new(models::config(), CassetteMode::Live, None).unwrap();
        let settings = ProviderSettings::new(dialect, server.base_url(), Some(ApiKey::new(KEY)));
        hub.set_provider("script", provider::build(settings).unwrap());
        let a = Arena::with_options("key-pieces", models::options(hub)).await;

        // The error text is "400: invalid_request_error: cannot use '{pad}'
        // with the key {KEY}": the key starts at 55 + pad and the cut is at
        // 300 characters, so these pads put the whole key before the cut
        // and then the cut at every eighth place inside it.
        let pads: Vec<usize> = (170..=240).step_by(5).collect();
        let dir = a.dir("fisher");
        let first = format!("model call - {}", "p".repeat(pads[0]));
        let mut req = hostile_request("fisher", &first, &dir, "default");
        req.settings.model_policy = Some(models::policy());
        let name = a.spawn(req).await;
        wait_done(&a.f, &name, "model", 1).await;
        for (i, pad) in pads.iter().enumerate().skip(1) {
            let cmd = format!("model call - {}", "p".repeat(*pad));
            a.f.host.send_as_lead(&a.f.name, &name, &cmd, None).unwrap();
            wait_done(&a.f, &name, "model", i + 1).await;
        }
        let got = wait_done(&a.f, &name, "model", pads.len()).await;
        let calls = all(&got, "model/call");
        assert_eq!(calls.len(), pads.len(), "{got:#?}");
        let mut masked = 0;
        for (pad, call) in pads.iter().zip(&calls) {
            assert!(!call.ok(), "the provider refused every call: {call:?}");
            assert!(
                call.detail.contains("cannot use 'ppp"),
                "the error still says what the provider refused: {call:?}"
            );
            if let Some(piece) = piece_in(&call.detail) {
                panic!("pad {pad}: the guest got {piece:?} of the key: {call:?}");
            }
            masked += usize::from(call.detail.contains("with the key <"));
        }
        assert_eq!(
            masked,
            pads.len(),
            "the key (or its start) was in every text, and masked: {calls:#?}"
        );
        // The provider got the key, in its header; nothing the host wrote
        // holds a piece of it: team files, logs, transcripts, usage.
        assert!(server.requests().len() >= pads.len());
        let mut files = Vec::new();
        every_file(a.f.tmp.path(), &mut files);
        assert!(files.len() > 5, "{files:?}");
        for (path, text) in &files {
            if let Some(piece) = piece_in(text) {
                panic!("{} holds {piece:?} of the key", path.display());
            }
        }
        a.assert_contained().await;
        a.echo_answers().await;
    }
}
