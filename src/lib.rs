//! # edgebucket
//!
//! Exact token-bucket rate limiting with [Bucket4j](https://bucket4j.com)'s semantics, written
//! once in Rust and run everywhere JavaScript runs (see the npm package and the Cloudflare
//! Worker in this repository).
//!
//! - **Complete model**: several bandwidths per bucket; greedy, intervally and intervally-aligned
//!   refill; initial tokens; bandwidth ids; overdraft; probes, estimates and reservations;
//!   configuration replacement with token inheritance; diagnostics.
//! - **Exact**: integer arithmetic only. The fraction of a token a greedy refill has earned is
//!   carried exactly, so results never depend on how time is split between calls, and waits are
//!   never reported early.
//! - **Pure**: [`TokenBucket`] takes the time as an argument, so hosts bring their own clock and
//!   tests are deterministic; [`Bucket`] reads a [`TimeMeter`] for you.
//! - **Storable**: [`codec`] turns a bucket into a few dozen bytes and back, checked.
//!
//! ```
//! use std::time::Duration;
//! use edgebucket::{Bandwidth, BucketConfiguration, TokenBucket};
//!
//! const SECOND: i64 = 1_000_000_000;
//! let config = BucketConfiguration::builder()
//!     // at most 5 per second, bursts of 5
//!     .add_limit(Bandwidth::builder().capacity(5).refill_greedy(5, Duration::from_secs(1)).id("burst").build()?)
//!     // and 100 per hour, given all at once each hour
//!     .add_limit(Bandwidth::builder().capacity(100).refill_intervally(100, Duration::from_secs(3600)).build()?)
//!     .build()?;
//! let mut bucket = TokenBucket::new(config, 0);
//! for _ in 0..5 {
//!     assert!(bucket.try_consume(1, 0)?);
//! }
//! let probe = bucket.try_consume_and_return_remaining(1, 0)?;
//! assert!(!probe.consumed);
//! assert_eq!(probe.nanos_to_wait_for_refill, SECOND / 5);
//! # Ok::<(), edgebucket::Error>(())
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod core;
/// The wasm-bindgen bindings behind the npm package (feature `wasm`).
#[cfg(feature = "wasm")]
pub mod wasm;
/// The Cloudflare Worker: buckets in Durable Objects, a rate-limit service and a gateway.
#[cfg(feature = "worker")]
pub mod worker;

pub use crate::core::bandwidth::{Bandwidth, BandwidthBuilder, Refill, RefillKind};
pub use crate::core::bucket::{Bucket, BucketBuilder};
pub use crate::core::codec;
pub use crate::core::configuration::{BucketConfiguration, ConfigurationBuilder};
pub use crate::core::diagnostics::{BandwidthDiagnostics, Diagnostics, VerboseResult};
pub use crate::core::duration::{DurationParts, DurationSpec, InstantSpec};
pub use crate::core::error::{Error, Result};
pub use crate::core::probe::{ConsumptionProbe, EstimationProbe};
pub use crate::core::replacement::TokensInheritanceStrategy;
pub use crate::core::schema::{BandwidthSpec, ConfigurationSpec, RefillKindName, RefillSpec};
pub use crate::core::state::INFINITY_DURATION;
pub use crate::core::store::{BucketStore, StoreOptions};
pub use crate::core::time_meter::TimeMeter;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub use crate::core::time_meter::{MillisecondClock, NanosecondClock};
pub use crate::core::token_bucket::TokenBucket;

/// The README's examples, compiled and run as doctests so they stay true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
