//! The ordered, non-empty list of bandwidths a bucket enforces together.

use super::bandwidth::Bandwidth;
use super::error::{Error, Result};

/// An immutable, validated list of bandwidths. A bucket admits a request only when every
/// bandwidth has the tokens; each consumption debits all of them.
///
/// ```
/// use std::time::Duration;
/// use edgebucket::{Bandwidth, BucketConfiguration, Error};
///
/// let config = BucketConfiguration::builder()
///     .add_limit(Bandwidth::builder().capacity(1000).refill_greedy(1000, Duration::from_secs(60)).id("business").build()?)
///     .add_limit(Bandwidth::builder().capacity(100).refill_greedy(100, Duration::from_secs(1)).id("burst").build()?)
///     .build()?;
/// assert_eq!(config.bandwidths().len(), 2);
///
/// // Ids must be unique; an empty configuration is rejected.
/// let dup = Bandwidth::builder().capacity(1).refill_greedy(1, Duration::from_secs(1)).id("x").build()?;
/// let err = BucketConfiguration::new(vec![dup.clone(), dup]).unwrap_err();
/// assert_eq!(err.code(), "DUPLICATE_BANDWIDTH_ID");
/// assert_eq!(BucketConfiguration::new(vec![]).unwrap_err(), Error::EmptyConfiguration);
/// # Ok::<(), edgebucket::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BucketConfiguration {
    bandwidths: Vec<Bandwidth>,
}

impl BucketConfiguration {
    /// Validates and wraps `bandwidths`: at least one, and no id used twice.
    pub fn new(bandwidths: Vec<Bandwidth>) -> Result<Self> {
        if bandwidths.is_empty() {
            return Err(Error::EmptyConfiguration);
        }
        for (second, bandwidth) in bandwidths.iter().enumerate() {
            let Some(id) = bandwidth.id() else { continue };
            if let Some(first) = bandwidths[..second].iter().position(|b| b.id() == Some(id)) {
                return Err(Error::DuplicateBandwidthId { id: id.to_owned(), first, second });
            }
        }
        Ok(BucketConfiguration { bandwidths })
    }

    /// Starts building a configuration.
    pub fn builder() -> ConfigurationBuilder {
        ConfigurationBuilder::default()
    }

    /// The bandwidths, in the order they were added.
    pub fn bandwidths(&self) -> &[Bandwidth] {
        &self.bandwidths
    }
}

/// Fluent builder for [`BucketConfiguration`].
#[derive(Debug, Clone, Default)]
pub struct ConfigurationBuilder {
    bandwidths: Vec<Bandwidth>,
}

impl ConfigurationBuilder {
    /// Adds a bandwidth; order is kept.
    pub fn add_limit(mut self, bandwidth: Bandwidth) -> Self {
        self.bandwidths.push(bandwidth);
        self
    }

    /// Validates the list (see [`BucketConfiguration::new`]).
    pub fn build(self) -> Result<BucketConfiguration> {
        BucketConfiguration::new(self.bandwidths)
    }
}
