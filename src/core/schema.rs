//! The one JSON configuration schema, shared by the Rust core, the JS API, the worker's
//! policies and the pacing client's learned policies.
//!
//! ```json
//! {
//!   "bandwidths": [
//!     { "id": "burst", "capacity": 50, "refill": { "kind": "greedy", "tokens": 10, "period": "1s" } },
//!     { "capacity": 1000, "initialTokens": 100,
//!       "refill": { "kind": "intervally", "tokens": 1000, "period": "1h" } },
//!     { "capacity": 400,
//!       "refill": { "kind": "intervallyAligned", "tokens": 400, "period": { "hours": 1 },
//!                   "firstRefillTime": "2026-11-21T17:00:00Z", "adaptiveInitialTokens": true } }
//!   ]
//! }
//! ```
//!
//! Durations and instants take several forms (see [`duration`](super::duration)); unknown fields
//! are rejected, so a misspelt `initalTokens` is an error rather than silently ignored.
//!
//! Reading happens in two steps so that errors keep their codes: serde reads the shape into a
//! [`ConfigurationSpec`] (shape errors are the host's, such as serde_json's), then
//! [`BucketConfiguration::try_from`] applies every rule with a typed [`Error`].
//! [`BucketConfiguration`] and [`Bandwidth`] also implement `Deserialize` directly, through the
//! same two steps, for callers who only need the message.
//!
//! ```
//! use edgebucket::{BucketConfiguration, ConfigurationSpec};
//!
//! let spec: ConfigurationSpec = serde_json::from_str(
//!     r#"{"bandwidths":[{"capacity":10,"refill":{"kind":"greedy","tokens":10,"period":"1s"}}]}"#,
//! ).unwrap();
//! let config = BucketConfiguration::try_from(spec)?;
//! assert_eq!(config.bandwidths()[0].refill().period_nanos(), 1_000_000_000);
//!
//! let zero: ConfigurationSpec = serde_json::from_str(
//!     r#"{"bandwidths":[{"capacity":0,"refill":{"kind":"greedy","tokens":1,"period":1000}}]}"#,
//! ).unwrap();
//! assert_eq!(BucketConfiguration::try_from(zero).unwrap_err().code(), "NON_POSITIVE_CAPACITY");
//! # Ok::<(), edgebucket::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bandwidth::{Bandwidth, RefillKind};
use super::configuration::BucketConfiguration;
use super::duration::{DurationSpec, InstantSpec};
use super::error::{Error, Result};
use super::replacement::TokensInheritanceStrategy;

/// A configuration as JSON writes it, not yet validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigurationSpec {
    /// The bandwidths, in order.
    pub bandwidths: Vec<BandwidthSpec>,
}

/// A bandwidth as JSON writes it, not yet validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BandwidthSpec {
    /// See [`Bandwidth::capacity`].
    pub capacity: i64,
    /// See [`RefillSpec`].
    pub refill: RefillSpec,
    /// Explicit initial tokens; capacity when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_tokens: Option<i64>,
    /// See [`Bandwidth::id`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

/// A refill as JSON writes it, not yet validated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RefillSpec {
    /// `greedy`, `intervally` or `intervallyAligned`.
    pub kind: RefillKindName,
    /// Tokens per period.
    pub tokens: i64,
    /// The period.
    pub period: DurationSpec,
    /// Required for, and only for, `intervallyAligned`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_refill_time: Option<InstantSpec>,
    /// Only for `intervallyAligned`; false when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_initial_tokens: Option<bool>,
}

/// The refill styles by their JSON names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum RefillKindName {
    Greedy,
    Intervally,
    IntervallyAligned,
}

impl TryFrom<ConfigurationSpec> for BucketConfiguration {
    type Error = Error;

    fn try_from(spec: ConfigurationSpec) -> Result<Self> {
        let bandwidths = spec.bandwidths.into_iter().map(Bandwidth::try_from).collect::<Result<_>>()?;
        BucketConfiguration::new(bandwidths)
    }
}

impl TryFrom<BandwidthSpec> for Bandwidth {
    type Error = Error;

    fn try_from(spec: BandwidthSpec) -> Result<Self> {
        let refill = spec.refill;
        let kind = match (refill.kind, refill.first_refill_time, refill.adaptive_initial_tokens) {
            (RefillKindName::Greedy, None, None) => RefillKind::Greedy,
            (RefillKindName::Intervally, None, None) => RefillKind::Intervally,
            (RefillKindName::IntervallyAligned, Some(first), adaptive) => RefillKind::IntervallyAligned {
                first_refill_nanos: first.to_nanos()?,
                adaptive_initial_tokens: adaptive.unwrap_or(false),
            },
            (RefillKindName::IntervallyAligned, None, _) => {
                return Err(Error::InvalidConfiguration {
                    reason: "an intervallyAligned refill needs firstRefillTime".into(),
                })
            }
            (_, _, _) => {
                return Err(Error::InvalidConfiguration {
                    reason: "firstRefillTime and adaptiveInitialTokens apply only to intervallyAligned refills".into(),
                })
            }
        };
        let mut builder =
            Bandwidth::builder().capacity(spec.capacity).refill_nanos(kind, refill.tokens, refill.period.to_nanos()?);
        if let Some(tokens) = spec.initial_tokens {
            builder = builder.initial_tokens(tokens);
        }
        if let Some(id) = spec.id {
            builder = builder.id(id);
        }
        builder.build()
    }
}

impl From<&BucketConfiguration> for ConfigurationSpec {
    fn from(configuration: &BucketConfiguration) -> Self {
        ConfigurationSpec { bandwidths: configuration.bandwidths().iter().map(BandwidthSpec::from).collect() }
    }
}

impl From<&Bandwidth> for BandwidthSpec {
    fn from(bandwidth: &Bandwidth) -> Self {
        let refill = bandwidth.refill();
        let (kind, first_refill_time, adaptive_initial_tokens) = match refill.kind() {
            RefillKind::Greedy => (RefillKindName::Greedy, None, None),
            RefillKind::Intervally => (RefillKindName::Intervally, None, None),
            RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens } => (
                RefillKindName::IntervallyAligned,
                // Validated not before the epoch.
                Some(InstantSpec::from_nanos(u64::try_from(first_refill_nanos).unwrap_or_default())),
                Some(adaptive_initial_tokens),
            ),
        };
        BandwidthSpec {
            capacity: bandwidth.capacity(),
            refill: RefillSpec {
                kind,
                tokens: refill.tokens(),
                period: DurationSpec::from_nanos(refill.period_nanos().unsigned_abs()), // a period is positive
                first_refill_time,
                adaptive_initial_tokens,
            },
            initial_tokens: bandwidth.initial_tokens,
            id: bandwidth.id.clone(),
        }
    }
}

impl Serialize for BucketConfiguration {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        ConfigurationSpec::from(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for BucketConfiguration {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let spec = ConfigurationSpec::deserialize(deserializer)?;
        BucketConfiguration::try_from(spec).map_err(serde::de::Error::custom)
    }
}

impl Serialize for Bandwidth {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        BandwidthSpec::from(self).serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Bandwidth {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let spec = BandwidthSpec::deserialize(deserializer)?;
        Bandwidth::try_from(spec).map_err(serde::de::Error::custom)
    }
}

impl Serialize for TokensInheritanceStrategy {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for TokensInheritanceStrategy {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        let name = String::deserialize(deserializer)?;
        TokensInheritanceStrategy::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown strategy \"{name}\": expected RESET, PROPORTIONALLY, AS_IS or ADDITIVE"
            ))
        })
    }
}
