//! The ordered, non-empty list of bandwidths a bucket enforces together.

use std::collections::HashMap;

use foldhash::fast::FixedState;

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
        if let Some((id, first, second)) = duplicate_id(&bandwidths) {
            return Err(Error::DuplicateBandwidthId { id: id.to_owned(), first, second });
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

/// The first id used twice, as positions: the earliest bandwidth that repeats an id, and the
/// id's first use. A map keeps this linear: configurations also arrive from decoded bytes and
/// JSON, where a pairwise scan would let a large input cost quadratic time. (A sort did the same
/// for 3.8 KB more of the npm package's wasm; the store already links this map.)
fn duplicate_id(bandwidths: &[Bandwidth]) -> Option<(&str, usize, usize)> {
    let mut first_use: HashMap<&str, usize, FixedState> = HashMap::default();
    for (second, id) in bandwidths.iter().enumerate().filter_map(|(at, b)| b.id().map(|id| (at, id))) {
        if let Some(&first) = first_use.get(id) {
            return Some((id, first, second));
        }
        first_use.insert(id, second);
    }
    None
}
