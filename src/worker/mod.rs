//! The Cloudflare Worker (feature `worker`): exact token buckets in Durable Objects, served as a
//! JSON rate-limit service under `/v1` (`API_PREFIX`) and as a gateway in front of an origin, with the IETF
//! `RateLimit` headers on every decision. Built with `worker-build`, configured in
//! `wrangler.toml`. Design notes: `docs/worker.md`.
//!
//! One concept per module:
//! - configuration: [`policy`](crate::worker::policy), [`routes`](crate::worker::routes), held
//!   per isolate by [`settings`](crate::worker::settings), which checks a [`site`](crate::worker::site);
//! - the request's way through: [`exchange`](crate::worker::exchange), with `entry.js` doing
//!   the IO;
//! - serving: [`api`](crate::worker::api) (endpoints and bodies) and
//!   [`service`](crate::worker::service) for the API prefix, [`gateway`](crate::worker::gateway) for the rest,
//!   with its [`cors`](crate::worker::cors) and [`forwarding`](crate::worker::forwarding) to the origin;
//! - deciding: [`client`](crate::worker::client) asks the key's
//!   [`durable_object`](crate::worker::durable_object) (its [`bucket_row`](crate::worker::bucket_row)
//!   and [`idle_alarm`](crate::worker::idle_alarm)), or falls back per
//!   [`failure`](crate::worker::failure); [`decide`](crate::worker::decide) is the logic both
//!   share, [`protocol`](crate::worker::protocol) what they exchange;
//! - answers: [`headers`](crate::worker::headers), [`errors`](crate::worker::errors),
//!   [`respond`](crate::worker::respond);
//! - requests: [`incoming`](crate::worker::incoming), [`keys`](crate::worker::keys),
//!   [`auth`](crate::worker::auth);
//! - observing: [`log`](crate::worker::log), [`metrics`](crate::worker::metrics).

pub mod api;
pub mod auth;
pub mod bucket_row;
pub mod client;
pub mod cors;
pub mod decide;
#[allow(missing_docs)] // the #[durable_object] expansion adds undocumented public glue
pub mod durable_object;
pub mod errors;
pub mod exchange;
pub mod failure;
pub mod forwarding;
pub mod gateway;
pub mod headers;
pub mod idle_alarm;
pub mod incoming;
pub mod keys;
pub mod log;
pub mod metrics;
pub mod policy;
pub mod protocol;
pub mod respond;
pub mod routes;
pub mod service;
pub mod settings;
pub mod site;

pub use durable_object::BucketObject;
pub use exchange::Exchange;
