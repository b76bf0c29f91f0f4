//! The wasm-bindgen bindings behind the npm package (feature `wasm`).
//!
//! This layer only translates: JS numbers to `i64` and back, JS objects to the core's JSON schema
//! ([`ConfigurationSpec`](crate::ConfigurationSpec), through serde-wasm-bindgen), errors to JS
//! `EdgeBucketError`s. Every rule lives in the core.
//!
//! The hot path crosses the boundary with numbers only: an operation takes `f64` arguments
//! (tokens, the time read by JS) and returns a small status ([`STATUS_FALSE`](crate::wasm::exchange::STATUS_FALSE) …); the
//! numbers of a result are left in the [`exchange`](crate::wasm::exchange) area of wasm memory, where the JS side reads
//! them. So `tryConsume` neither allocates nor serializes. Configurations, strategies and
//! durations, which are not hot, go through serde and return `Result<_, JsValue>`.
//!
//! The JS classes wrapping these (`js/` in the repository) are the public API; the raw classes
//! here are internal and may change between releases.

pub mod bucket;
pub mod configuration;
pub mod errors;
pub mod exchange;
pub mod store;
pub mod time;
