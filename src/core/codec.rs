//! A versioned binary encoding of a bucket (configuration, state and an optional configuration
//! version), so any store — Durable Object storage, Redis, a file — can hold a bucket as bytes.
//!
//! # Format
//!
//! `"EB"`, one format-version byte ([`FORMAT_VERSION`]), then a [postcard] payload: integers as
//! (zigzag) varints, so a one-bandwidth bucket takes about 30 bytes. Decoding checks everything
//! the builders check, that there is one state per bandwidth and that token counts fit in 64
//! bits; bytes that fail any check, or were written by a newer format, are an [`Error`], never
//! a panic. [`encode`] writes each varint in its shortest form, but decoding also reads longer
//! forms (postcard's, such as `80 00` for 0): compare decoded buckets, not their bytes.
//!
//! ```
//! use std::time::Duration;
//! use edgebucket::{codec, Bandwidth, BucketConfiguration, TokenBucket};
//!
//! let limit = Bandwidth::builder().capacity(10).refill_greedy(10, Duration::from_secs(1)).build()?;
//! let mut bucket = TokenBucket::new(BucketConfiguration::builder().add_limit(limit).build()?, 0);
//! bucket.try_consume(3, 0)?;
//!
//! let bytes = codec::encode(&bucket, Some(7));
//! let decoded = codec::decode(&bytes)?;
//! assert_eq!(decoded.bucket, bucket);
//! assert_eq!(decoded.configuration_version, Some(7));
//! assert_eq!(codec::decode(&bytes[..bytes.len() - 1]).unwrap_err().code(), "INVALID_ENCODING");
//! # Ok::<(), edgebucket::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::bandwidth::{Bandwidth, RefillKind};
use super::configuration::BucketConfiguration;
use super::error::{Error, Result};
use super::state::{floor_div, BandwidthState};
use super::token_bucket::TokenBucket;

/// The format version this build writes, and the newest it reads.
pub const FORMAT_VERSION: u8 = 1;

const MAGIC: &[u8; 2] = b"EB";

/// A decoded bucket and the configuration version stored with it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decoded {
    /// The bucket, exactly as encoded.
    pub bucket: TokenBucket,
    /// The version given to [`encode`], for implicit configuration replacement by stores.
    pub configuration_version: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct Record {
    configuration_version: Option<u64>,
    bandwidths: Vec<BandwidthRecord>,
    states: Vec<StateRecord>,
}

#[derive(Serialize, Deserialize)]
struct BandwidthRecord {
    capacity: i64,
    kind: KindRecord,
    refill_tokens: i64,
    period_nanos: i64,
    initial_tokens: Option<i64>,
    id: Option<String>,
}

#[derive(Serialize, Deserialize)]
enum KindRecord {
    Greedy,
    Intervally,
    IntervallyAligned { first_refill_nanos: i64, adaptive_initial_tokens: bool },
}

#[derive(Serialize, Deserialize)]
struct StateRecord {
    level: i128,
    last_refill_nanos: i64,
}

/// Encodes `bucket` and an optional configuration version.
pub fn encode(bucket: &TokenBucket, configuration_version: Option<u64>) -> Vec<u8> {
    let bandwidths = bucket.configuration().bandwidths();
    let record = Record {
        configuration_version,
        bandwidths: bandwidths.iter().map(bandwidth_record).collect(),
        states: bucket
            .states()
            .iter()
            .map(|s| StateRecord { level: s.level, last_refill_nanos: s.last_refill_nanos })
            .collect(),
    };
    let mut bytes = MAGIC.to_vec();
    bytes.push(FORMAT_VERSION);
    // Serializing plain integers, options and strings into a Vec cannot fail.
    postcard::to_extend(&record, bytes).expect("postcard encodes into a Vec")
}

/// Decodes bytes written by [`encode`] (of this or an older format version).
///
/// # Errors
/// [`Error::UnsupportedFormatVersion`] for bytes of a newer format;
/// [`Error::InvalidEncoding`] for anything else that is not a valid bucket.
pub fn decode(bytes: &[u8]) -> Result<Decoded> {
    let payload = match bytes {
        [b'E', b'B', version, payload @ ..] if *version == FORMAT_VERSION => payload,
        [b'E', b'B', version, ..] => {
            return Err(Error::UnsupportedFormatVersion { version: *version, supported: FORMAT_VERSION })
        }
        _ => return Err(invalid("missing the \"EB\" header")),
    };
    let (record, rest): (Record, &[u8]) =
        postcard::take_from_bytes(payload).map_err(|e| invalid(format!("malformed payload ({e})")))?;
    if !rest.is_empty() {
        return Err(invalid(format!("{} unexpected trailing bytes", rest.len())));
    }
    let bandwidths = record.bandwidths.into_iter().map(bandwidth).collect::<Result<Vec<_>>>()?;
    let configuration = BucketConfiguration::new(bandwidths).map_err(|e| invalid(e.to_string()))?;
    if record.states.len() != configuration.bandwidths().len() {
        return Err(invalid(format!(
            "{} states for a configuration of {} bandwidths",
            record.states.len(),
            configuration.bandwidths().len()
        )));
    }
    let states =
        configuration.bandwidths().iter().zip(record.states).map(|(b, s)| state(b, s)).collect::<Result<Vec<_>>>()?;
    Ok(Decoded {
        bucket: TokenBucket::from_parts(configuration, states),
        configuration_version: record.configuration_version,
    })
}

fn invalid(reason: impl Into<String>) -> Error {
    Error::InvalidEncoding { reason: reason.into() }
}

fn bandwidth_record(b: &Bandwidth) -> BandwidthRecord {
    let kind = match b.refill.kind {
        RefillKind::Greedy => KindRecord::Greedy,
        RefillKind::Intervally => KindRecord::Intervally,
        RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens } => {
            KindRecord::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens }
        }
    };
    BandwidthRecord {
        capacity: b.capacity,
        kind,
        refill_tokens: b.refill.tokens,
        period_nanos: b.refill.period_nanos,
        initial_tokens: b.initial_tokens,
        id: b.id.clone(),
    }
}

fn bandwidth(r: BandwidthRecord) -> Result<Bandwidth> {
    let kind = match r.kind {
        KindRecord::Greedy => RefillKind::Greedy,
        KindRecord::Intervally => RefillKind::Intervally,
        KindRecord::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens } => {
            RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens }
        }
    };
    let mut builder =
        Bandwidth::builder().capacity(r.capacity).refill_nanos(kind, r.refill_tokens, r.period_nanos.into());
    if let Some(tokens) = r.initial_tokens {
        builder = builder.initial_tokens(tokens);
    }
    if let Some(id) = r.id {
        builder = builder.id(id);
    }
    builder.build().map_err(|e| invalid(e.to_string()))
}

fn state(bandwidth: &Bandwidth, r: StateRecord) -> Result<BandwidthState> {
    let tokens = floor_div(r.level, bandwidth.refill.period_nanos);
    if i64::try_from(tokens).is_err() {
        return Err(invalid(format!("token level {} out of range", r.level)));
    }
    Ok(BandwidthState::from_parts(r.level, r.last_refill_nanos))
}
