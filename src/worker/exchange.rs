//! One request through the front worker, decided here without doing any IO ("sans-IO"): each
//! method says what is needed next, `entry.js` does it (reads the body, calls the bucket's
//! Durable Object, fetches the origin) and hands the result back, until a response is ready.
//!
//! Why the IO lives in JavaScript: every `await` in Rust costs wasm-bindgen's future machinery
//! (a promise, closures registered for finalization, a `queueMicrotask`, which alone costs about
//! 3 µs in workerd), and workers-rs's fetch handler adds its own wrappers. With the same Rust
//! deciding everything, moving the awaits to `entry.js` took workerd's CPU per decision from
//! about 408 to about 342 µs, and decisions/s up by a fifth (docs/worker.md, "Speed").
//!
//! Each step is an array for `entry.js`, led by its kind (a number, `STEP` in `entry.js`):
//! - `[READ, limit]`: read the body (at most `limit` bytes), then [`Exchange::body`];
//! - `[ASK, key, command, timeout]`: call `decide(command)` on the object of `key`, then
//!   [`Exchange::reply`], or [`Exchange::unreachable`] when it failed or `timeout` (milliseconds,
//!   when there is one) passed first;
//! - `[FORWARD, request]`: fetch `request`, then [`Exchange::upstream`] or
//!   `originFailed` ([`Exchange::origin_failed`]);
//! - `[RESPOND, status, head, body, drain]`: answer a [`respond::Answer`] (its headers as one
//!   string, see [`Answer::head`]), first reading and dropping what is left of the request body
//!   when `drain` is set;
//! - `[RELAY, response]`: answer the origin's `response`, with the bucket's headers added.

use std::rc::Rc;
use std::time::Duration;

use worker::wasm_bindgen::{self, prelude::wasm_bindgen, JsValue};
use worker::{js_sys, web_sys, Env};

use super::api::{self, Endpoint, MAX_BODY_BYTES};
use super::client::Reply;
use super::errors::ApiError;
use super::gateway::{self, Pending};
use super::incoming::Incoming;
use super::policy::Policies;
use super::protocol::Command;
use super::respond::{self, Answer};
use super::service;
use super::settings::{self, Settings};

/// What a step asks `entry.js` to do; its `STEP` constants mirror these. Numbers rather than
/// names: a string would cross the boundary (a copy and a typed-array view) on every step.
#[derive(Debug, Clone, Copy)]
#[repr(u8)]
enum Kind {
    Read = 0,
    Ask = 1,
    Forward = 2,
    Respond = 3,
    Relay = 4,
}

impl From<Kind> for JsValue {
    fn from(kind: Kind) -> JsValue {
        JsValue::from(kind as u8)
    }
}

/// A request on its way through the front worker (see the module documentation).
#[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
pub struct Exchange {
    req: Incoming,
    /// Arrival, epoch milliseconds, for the latency metric.
    started: f64,
    settings: Result<Rc<Settings>, ApiError>,
    waiting: Waiting,
}

/// What the exchange waits for.
enum Waiting {
    /// Nothing yet: [`Exchange::start`] comes first.
    Start,
    /// A service endpoint, for its body.
    Body(Endpoint),
    /// A service endpoint, for its bucket's answer.
    Service(Endpoint, Command),
    /// A gateway route, for its bucket's answer.
    Gateway(Pending),
    /// An admitted gateway request, for the origin; then these headers are added.
    Origin(Vec<(&'static str, String)>),
    /// Nothing: the response was given.
    Done,
}

#[wasm_bindgen(wasm_bindgen = ::worker::wasm_bindgen)]
impl Exchange {
    /// Takes `request` in, with the worker's `env` (its settings).
    #[wasm_bindgen(constructor)]
    pub fn new(request: web_sys::Request, env: Env) -> Exchange {
        let started = js_sys::Date::now();
        let settings = settings::load(&env);
        Exchange { req: Incoming::new(request), started, settings, waiting: Waiting::Start }
    }

    /// The first step: paths under the API prefix (`/v1`) are the service API, everything else
    /// the gateway.
    pub fn start(&mut self) -> JsValue {
        let settings = match &self.settings {
            Ok(settings) => Rc::clone(settings),
            Err(error) => return self.respond(respond::problem(error), false),
        };
        match api::endpoint(&self.req.method(), self.req.path(), &settings.api_prefix) {
            Ok(Some(endpoint)) => {
                let step = service::start(&endpoint, &self.req, &settings, self.started);
                self.service_step(endpoint, step)
            }
            Ok(None) => {
                let step = gateway::start(&self.req, &settings, self.started);
                self.gateway_step(step)
            }
            Err(error) => self.respond(respond::counted_problem(&error), true),
        }
    }

    /// The body `entry.js` read: `None` when it passed the limit; `error` when it could not be
    /// read.
    pub fn body(&mut self, bytes: Option<Vec<u8>>, error: Option<String>) -> JsValue {
        let Waiting::Body(endpoint) = std::mem::replace(&mut self.waiting, Waiting::Done) else {
            return self.out_of_turn("body");
        };
        let body = match error {
            Some(error) => Err(error),
            None => Ok(bytes),
        };
        let step = service::with_body(&endpoint, body, self.settings(), self.started);
        self.service_step(endpoint, step)
    }

    /// The bucket object's answer: its status and body.
    pub fn reply(&mut self, status: u16, body: String) -> JsValue {
        self.replied(Ok((status, body)))
    }

    /// The bucket object could not be reached, or failed to answer.
    pub fn unreachable(&mut self, error: String) -> JsValue {
        self.replied(Err(error))
    }

    /// The origin's answer to a forwarded request.
    pub fn upstream(&mut self, response: web_sys::Response) -> JsValue {
        let Waiting::Origin(extra) = std::mem::replace(&mut self.waiting, Waiting::Done) else {
            return self.out_of_turn("upstream");
        };
        match gateway::with_response(&self.req, self.settings(), response, &extra) {
            Ok(response) => js_sys::Array::of2(&Kind::Relay.into(), &response).into(),
            Err(answer) => self.respond(answer, false),
        }
    }

    /// The origin could not be reached.
    #[wasm_bindgen(js_name = originFailed)]
    pub fn origin_failed(&mut self, error: String) -> JsValue {
        let Waiting::Origin(extra) = std::mem::replace(&mut self.waiting, Waiting::Done) else {
            return self.out_of_turn("origin_failed");
        };
        let answer = gateway::unreachable(&self.req, self.settings(), &error, &extra);
        self.respond(answer, true)
    }
}

impl Exchange {
    fn replied(&mut self, reply: Reply) -> JsValue {
        match std::mem::replace(&mut self.waiting, Waiting::Done) {
            Waiting::Service(endpoint, command) => {
                let answer = service::with_reply(&endpoint, &command, reply, self.settings(), self.started);
                self.respond(answer, true)
            }
            Waiting::Gateway(pending) => {
                let step = gateway::with_reply(&self.req, self.settings(), &pending, reply, self.started);
                self.gateway_step(step)
            }
            _ => self.out_of_turn("reply"),
        }
    }

    fn service_step(&mut self, endpoint: Endpoint, step: service::Step) -> JsValue {
        match step {
            service::Step::Body => {
                self.waiting = Waiting::Body(endpoint);
                js_sys::Array::of2(&Kind::Read.into(), &(MAX_BODY_BYTES as u32).into()).into()
            }
            service::Step::Ask(command) => match ask(service::key_of(&endpoint), &command, self.settings()) {
                Ok(ask) => {
                    self.waiting = Waiting::Service(endpoint, command);
                    ask
                }
                Err(error) => self.respond(respond::counted_problem(&error), true),
            },
            service::Step::Answer(answer) => self.respond(answer, true),
        }
    }

    fn gateway_step(&mut self, step: gateway::Step) -> JsValue {
        match step {
            gateway::Step::Ask(pending) => match ask(&pending.key, &pending.command, self.settings()) {
                Ok(ask) => {
                    self.waiting = Waiting::Gateway(pending);
                    ask
                }
                Err(error) => self.respond(respond::counted_problem(&error), true),
            },
            gateway::Step::Forward(upstream, headers) => {
                self.waiting = Waiting::Origin(headers);
                js_sys::Array::of2(&Kind::Forward.into(), &upstream).into()
            }
            gateway::Step::Answer(answer) => self.respond(answer, true),
        }
    }

    /// `[RESPOND, status, head, body, drain]`.
    fn respond(&mut self, answer: Answer, drain: bool) -> JsValue {
        self.waiting = Waiting::Done;
        let (answer, head) = match answer.head() {
            Ok(head) => (answer, head),
            Err(error) => {
                let problem = respond::counted_problem(&error);
                let head = problem.head().unwrap_or_default(); // its own headers hold no line break
                (problem, head)
            }
        };
        let (status, body) = (JsValue::from(answer.status), JsValue::from(answer.body));
        js_sys::Array::of5(&Kind::Respond.into(), &status, &head.into(), &body, &drain.into()).into()
    }

    /// A call `entry.js` should not have made now: a bug there, answered 500 rather than trapped.
    fn out_of_turn(&mut self, call: &str) -> JsValue {
        let error = ApiError::internal(format!("exchange: {call} was not awaited"));
        self.respond(respond::problem(&error), true)
    }

    /// The settings; only called once [`Exchange::start`] found them readable.
    fn settings(&self) -> &Settings {
        self.settings.as_deref().expect("start answers when the settings are unreadable")
    }
}

/// `[ASK, key, command]`, the command as JSON (which the object reads with serde_json: a
/// JavaScript object would round 64-bit integers), and the policy's timeout in milliseconds
/// when the command is a decision under a policy that sets one. Administrative calls have no
/// fallback to give when they wait too long, so they wait.
fn ask(key: &str, command: &Command, settings: &Settings) -> Result<JsValue, ApiError> {
    let json = serde_json::to_string(command).map_err(|e| ApiError::internal(e.to_string()))?;
    let (kind, key, json) = (Kind::Ask.into(), key.into(), json.into());
    match decision_timeout(command, &settings.policies) {
        Some(timeout) => Ok(js_sys::Array::of4(&kind, &key, &json, &(timeout.as_millis() as u32).into()).into()),
        None => Ok(js_sys::Array::of3(&kind, &key, &json).into()),
    }
}

/// How long `command` may wait for its object: its policy's `timeout`, for a decision.
fn decision_timeout(command: &Command, policies: &Policies) -> Option<Duration> {
    let policy = command.policy().filter(|_| command.is_decision())?;
    policies.get(policy)?.timeout
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::worker::protocol::Mode;

    #[test]
    fn only_decisions_under_a_policy_with_a_timeout_have_one() {
        let bandwidths =
            r#""bandwidths": [{"capacity": 5, "refill": {"kind": "greedy", "tokens": 5, "period": "1s"}}]"#;
        let policies = Policies::parse(&format!(
            r#"{{"quick": {{"timeout": "50ms", {bandwidths}}}, "patient": {{{bandwidths}}}}}"#
        ))
        .unwrap();
        let consume = |policy: &str| Command::Consume { policy: policy.into(), tokens: 1, mode: Mode::Try };
        let reserve = Command::Reserve { policy: "quick".into(), tokens: 1, max_wait_nanos: 1 };
        assert_eq!(decision_timeout(&consume("quick"), &policies), Some(Duration::from_millis(50)));
        assert_eq!(decision_timeout(&reserve, &policies), Some(Duration::from_millis(50)));
        assert_eq!(decision_timeout(&consume("patient"), &policies), None);
        assert_eq!(decision_timeout(&consume("unknown"), &policies), None);
        let replace = Command::Replace { policy: "quick".into(), strategy: None };
        assert_eq!(decision_timeout(&replace, &policies), None, "an administrative call has no fallback");
    }
}
