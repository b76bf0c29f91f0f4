//! The front worker's side of a bucket: sends a command to the key's Durable Object and, when the
//! object cannot decide, applies the policy's failure mode.

use std::cell::RefCell;

use worker::wasm_bindgen::{self, prelude::wasm_bindgen, JsCast, JsValue};
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, Env};

use super::decide;
use super::errors::ApiError;
use super::failure::{FailureMode, LocalBuckets};
use super::protocol::{Command, Outcome};
use super::settings::Settings;

/// The Durable Object binding's name in `wrangler.toml`.
pub const BINDING: &str = "BUCKETS";

thread_local! {
    static LOCAL: RefCell<LocalBuckets> = RefCell::new(LocalBuckets::default());
}

/// A decision, and who took it.
#[derive(Debug)]
pub struct Verdict {
    /// The outcome, or the error to answer.
    pub result: Result<Outcome, ApiError>,
    /// Set when the policy's failure mode decided instead of the object.
    pub fallback: Option<FailureMode>,
    /// Why the object could not decide.
    pub failure: Option<String>,
}

/// Decides `command` for `key`: by its Durable Object, else by the policy's failure mode.
pub async fn decide(env: &Env, settings: &Settings, key: &str, command: &Command) -> Verdict {
    if let Err(error) = decide::check(command, &settings.policies) {
        return Verdict { result: Err(error), fallback: None, failure: None };
    }
    match send(env, key, command).await {
        Ok((200, body)) => Verdict { result: parse_outcome(&body), fallback: None, failure: None },
        Ok((status, body)) if (400..500).contains(&status) => {
            let error = ApiError::from_problem(status, &body).unwrap_or_else(|| ApiError::internal(body));
            Verdict { result: Err(error), fallback: None, failure: None }
        }
        Ok((status, body)) => fall_back(settings, key, command, format!("the bucket answered {status}: {body}")),
        Err(error) => fall_back(settings, key, command, error.to_string()),
    }
}

/// Sends `command` to the object of `key` over RPC (its `decide` method); returns its status and
/// body.
///
/// RPC rather than `fetch`: no request, response, headers or body streams per decision. In
/// local workerd a minimal worker doing one SQL write per call reached about 40 % more calls/s
/// this way (docs/worker.md, "Speed").
///
/// # Errors
/// When the binding is missing or the object cannot be reached.
pub async fn send(env: &Env, key: &str, command: &Command) -> worker::Result<(u16, String)> {
    let stub: BucketStub = env.durable_object(BINDING)?.id_from_name(key)?.get_stub()?.into_rpc();
    let body = serde_json::to_string(command).map_err(|e| worker::Error::RustError(e.to_string()))?;
    let answer = JsFuture::from(stub.decide(&body)?).await?;
    let answer: js_sys::Array = answer.dyn_into()?;
    let status = answer.get(0).as_f64().and_then(|s| u16::try_from(s as i64).ok());
    match (status, answer.get(1).as_string()) {
        (Some(status), Some(body)) => Ok((status, body)),
        _ => Err(worker::Error::RustError("the bucket answered neither a status nor a body".into())),
    }
}

#[wasm_bindgen]
extern "C" {
    /// A stub of [`BucketObject`](super::BucketObject), with its RPC method.
    type BucketStub;

    /// Resolves to `[status, body]`.
    #[wasm_bindgen(method, catch)]
    fn decide(this: &BucketStub, command: &str) -> Result<js_sys::Promise, JsValue>;
}

fn parse_outcome(body: &str) -> Result<Outcome, ApiError> {
    serde_json::from_str(body).map_err(|e| ApiError::internal(format!("unreadable answer from the bucket: {e}")))
}

/// The policy's failure mode. Only consume and reserve have one; administrative commands fail.
fn fall_back(settings: &Settings, key: &str, command: &Command, failure: String) -> Verdict {
    let unavailable = ApiError::new(503, "RATE_LIMITER_UNAVAILABLE", "the bucket could not decide; try again shortly");
    let policy = match command {
        Command::Consume { .. } | Command::Reserve { .. } => command.policy().and_then(|p| settings.policies.get(p)),
        _ => None,
    };
    let Some(policy) = policy else {
        // An administrative call: its caller holds the admin token and needs the cause
        // (`STORAGE_CORRUPT`, `STORAGE_ERROR`, …), not only that there was one.
        let detail = format!("the bucket could not answer: {failure}");
        let unavailable = ApiError::new(503, "RATE_LIMITER_UNAVAILABLE", detail);
        return Verdict { result: Err(unavailable), fallback: None, failure: Some(failure) };
    };
    let now = now_nanos();
    let result = match policy.failure {
        FailureMode::Open => Ok(decide::describe(policy, now)),
        // Shadow mode never rejects, a failure included: the rejection is logged and let through.
        FailureMode::Closed if policy.shadow && !command.is_estimate() => {
            Ok(Outcome { allowed: false, ..decide::describe(policy, now) })
        }
        FailureMode::Closed => Err(unavailable),
        FailureMode::Degrade => {
            LOCAL.with(|local| local.borrow_mut().apply(key, command, &settings.policies, now)).map(|e| e.outcome)
        }
    };
    Verdict { result, fallback: Some(policy.failure), failure: Some(failure) }
}

/// The isolate's clock (`Date.now()`) in nanoseconds.
pub fn now_nanos() -> i64 {
    js_millis() * 1_000_000
}

/// `Date.now()`: whole milliseconds since the epoch.
pub fn js_millis() -> i64 {
    worker::js_sys::Date::now() as i64
}
