//! The pure token-bucket core: no clock of its own, no wasm, JS or Cloudflare dependency.
//!
//! One concept per module: [`bandwidth`] and [`configuration`] describe limits, [`state`] holds
//! the exact per-bandwidth arithmetic, [`token_bucket`] runs the operations at a given time,
//! [`bucket`] adds a [`time_meter`], [`replacement`] carries tokens over to a new configuration,
//! [`codec`] turns a bucket into bytes and back, [`schema`] and [`duration`] are the JSON form,
//! [`store`] holds many buckets by key.

pub mod bandwidth;
pub mod bucket;
pub mod codec;
pub mod configuration;
pub mod diagnostics;
pub mod duration;
pub mod error;
pub mod probe;
pub mod replacement;
pub mod schema;
pub mod state;
pub mod store;
pub mod time_meter;
pub mod token_bucket;
