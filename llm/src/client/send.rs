//! One POST to an endpoint, and its answer or failure put in words.

use std::time::SystemTime;

use serde_json::Value;

use crate::config::Endpoint;

use super::detail::innermost;
use super::outcome::Outcome;
use super::redirect::CrossOrigin;
use super::requests::Client;
use super::retry::parse_retry_after;

impl Client {
    /// One POST to `path` under `endpoint`, its answer read to the end.
    pub(super) async fn send(&self, endpoint: &Endpoint, path: &str, body: &Value) -> Outcome {
        let url = format!("{}/{path}", endpoint.base_url.trim_end_matches('/'));
        let mut request = self.http.post(url).json(body);
        if let Some(key) = &endpoint.api_key {
            request = request.bearer_auth(key.expose());
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(e) => return self.transport(e),
        };
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        let success = response.status().is_success();
        match response.text().await {
            Err(e) => self.transport(e),
            Ok(text) if success => Outcome::Body(text),
            Ok(body) => Outcome::Status {
                status,
                retry_after,
                body,
            },
        }
    }

    /// A failure of reqwest in words, without the URL.
    fn transport(&self, e: reqwest::Error) -> Outcome {
        let e = e.without_url();
        let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
        while let Some(c) = cause {
            if let Some(CrossOrigin(to)) = c.downcast_ref::<CrossOrigin>() {
                return Outcome::Redirected(to.clone());
            }
            cause = c.source();
        }
        if e.is_builder() {
            return Outcome::Invalid(format!(
                "the request could not be built ({}); check the base URL and the API key",
                innermost(&e)
            ));
        }
        Outcome::Transport(if e.is_timeout() {
            format!("timed out after {:.1} s", self.config.timeout.as_secs_f64())
        } else if e.is_connect() {
            format!("could not connect ({})", innermost(&e))
        } else {
            format!("connection closed before an answer ({})", innermost(&e))
        })
    }
}
