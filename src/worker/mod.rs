//! The Cloudflare Worker (feature `worker`): exact token buckets in Durable Objects, served as a
//! JSON rate-limit service under `/v1` and as a gateway in front of an origin, with the IETF
//! `RateLimit` headers on every decision. Design notes: `docs/worker.md`.
//!
//! One concept per module:
//! - configuration: [`policy`](crate::worker::policy), [`routes`](crate::worker::routes);
//! - the `/v1` API's endpoints and bodies: [`api`](crate::worker::api);
//! - deciding: [`decide`](crate::worker::decide) (shared by the Durable Object and the fallback),
//!   [`protocol`](crate::worker::protocol) (what the front worker and the object exchange),
//!   [`failure`](crate::worker::failure) (when the object cannot decide);
//! - answers: [`headers`](crate::worker::headers), [`errors`](crate::worker::errors);
//! - requests: [`keys`](crate::worker::keys), [`auth`](crate::worker::auth);
//! - observing: [`metrics`](crate::worker::metrics).

pub mod api;
pub mod auth;
pub mod decide;
pub mod errors;
pub mod failure;
pub mod headers;
pub mod keys;
pub mod metrics;
pub mod policy;
pub mod protocol;
pub mod routes;
