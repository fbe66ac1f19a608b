//! `teamhost:agent/model`: completions brokered by the host.
//!
//! The teammate's [`ModelClient`](crate::model::ModelClient) applies its
//! policy, meter and cassette and calls the provider; this glue converts
//! the types and reports the call to the host's event channel (the live view
//! shows the teammate waiting on the model). The lead hears of a spent
//! budget once, when the turn ends (the runner's `notify_idle`). Nothing the provider or the broker
//! returns here can hold a key, a header or a URL: the broker's errors are
//! built without them.

use std::time::Instant;

use super::model_convert::{
    error_to_wit, message_to_wit, model_info_to_wit, request_from_wit, response_to_wit,
    spend_to_wit,
};
use super::ModelGlue;
use crate::model::ModelCallEvent;
use crate::runtime::bindings::model::{
    Host, Message, ModelError, ModelInfo, Request, Response, Spend,
};
use crate::runtime::bindings::ModelTrap;

impl ModelGlue<'_> {
    fn model_event(&self, event: ModelCallEvent) {
        if let Some(sink) = &self.model.sink {
            sink(event);
        }
    }

    /// One completion through the broker, reported to the event channel;
    /// `aside`: not kept as the conversation (`model.complete-aside`).
    async fn complete_brokered(
        &mut self,
        req: Request,
        aside: bool,
    ) -> Result<Response, ModelTrap> {
        let req = request_from_wit(req);
        self.model_event(ModelCallEvent::Started {
            model: req.model.clone(),
        });
        let started = Instant::now();
        self.model.clock.start();
        let result = if aside {
            self.model.client.complete_aside(req).await
        } else {
            self.model.client.complete(req).await
        };
        self.model.clock.stop();
        let spend = self.model.client.spent();
        match result {
            Ok(response) => {
                self.model_event(ModelCallEvent::Finished {
                    usage: response.usage,
                    spend,
                    millis: started.elapsed().as_millis() as u64,
                });
                Ok(response_to_wit(response))
            }
            Err(e) => {
                self.model_event(ModelCallEvent::Failed {
                    error: e.to_string(),
                    not_recorded: matches!(e, crate::model::ModelError::NotRecorded(_)),
                    spend,
                });
                Err(error_to_wit(e).into())
            }
        }
    }
}

impl Host for ModelGlue<'_> {
    async fn models(&mut self) -> wasmtime::Result<Vec<ModelInfo>> {
        Ok(self
            .model
            .client
            .models()
            .into_iter()
            .map(model_info_to_wit)
            .collect())
    }

    async fn complete(&mut self, req: Request) -> Result<Response, ModelTrap> {
        self.complete_brokered(req, false).await
    }

    async fn complete_aside(&mut self, req: Request) -> Result<Response, ModelTrap> {
        self.complete_brokered(req, true).await
    }

    fn convert_model_error(&mut self, err: ModelTrap) -> wasmtime::Result<ModelError> {
        err.into_wit()
    }

    async fn spent(&mut self) -> wasmtime::Result<Spend> {
        Ok(spend_to_wit(self.model.client.spent()))
    }

    async fn history(&mut self) -> wasmtime::Result<Vec<Message>> {
        let client = self.model.client.clone();
        let messages = tokio::task::spawn_blocking(move || client.history()).await?;
        Ok(messages.into_iter().map(message_to_wit).collect())
    }
}
