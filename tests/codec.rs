//! The binary codec: round trips, and every kind of bad bytes decodes to an error, never a panic.

use std::time::Duration;

use edgebucket::codec::{decode, encode, FORMAT_VERSION};
use edgebucket::{Bandwidth, BucketConfiguration, Error, TokenBucket};
use proptest::prelude::*;
use serde::Serialize;

const SEC: i64 = 1_000_000_000;

fn sample() -> TokenBucket {
    let bandwidths = vec![
        Bandwidth::builder().capacity(50).refill_greedy(10, Duration::from_secs(1)).id("burst").build().unwrap(),
        Bandwidth::builder()
            .capacity(1000)
            .refill_intervally(1000, Duration::from_secs(3600))
            .initial_tokens(3)
            .build()
            .unwrap(),
        Bandwidth::builder()
            .capacity(400)
            .refill_intervally_aligned(400, Duration::from_secs(3600), 1_795_280_400 * SEC, true)
            .id("hourly")
            .build()
            .unwrap(),
    ];
    let mut bucket = TokenBucket::new(BucketConfiguration::new(bandwidths).unwrap(), 1_795_280_000 * SEC);
    bucket.try_consume(7, 1_795_280_000 * SEC + 333).unwrap();
    bucket
}

#[test]
fn round_trips_with_and_without_a_version() {
    let bucket = sample();
    for version in [None, Some(0), Some(u64::MAX)] {
        let decoded = decode(&encode(&bucket, version)).unwrap();
        assert_eq!(decoded.bucket, bucket);
        assert_eq!(decoded.configuration_version, version);
    }
}

#[test]
fn is_compact() {
    let one = Bandwidth::builder().capacity(100).refill_greedy(100, Duration::from_secs(60)).build().unwrap();
    let bucket = TokenBucket::new(BucketConfiguration::new(vec![one]).unwrap(), 1_795_280_000 * SEC);
    let bytes = encode(&bucket, Some(3));
    assert!(bytes.len() <= 40, "{} bytes", bytes.len());
    assert_eq!(&bytes[..3], &[b'E', b'B', FORMAT_VERSION]);
}

#[test]
fn every_truncation_is_an_error() {
    let bytes = encode(&sample(), Some(9));
    for len in 0..bytes.len() {
        let err = decode(&bytes[..len]).unwrap_err();
        assert_eq!(err.code(), "INVALID_ENCODING", "prefix of {len} bytes");
    }
}

#[test]
fn trailing_bytes_are_an_error() {
    let mut bytes = encode(&sample(), None);
    bytes.push(0);
    assert!(matches!(decode(&bytes), Err(Error::InvalidEncoding { reason }) if reason.contains("trailing")));
}

#[test]
fn wrong_magic_and_newer_formats_are_errors() {
    let mut bytes = encode(&sample(), None);
    bytes[0] = b'X';
    assert_eq!(decode(&bytes).unwrap_err().code(), "INVALID_ENCODING");
    let mut bytes = encode(&sample(), None);
    bytes[2] = FORMAT_VERSION + 1;
    assert_eq!(
        decode(&bytes),
        Err(Error::UnsupportedFormatVersion { version: FORMAT_VERSION + 1, supported: FORMAT_VERSION })
    );
}

// Forged payloads: the format's shape, written independently of the codec, to produce bytes
// that are well-formed postcard but not a valid bucket.

#[derive(Serialize, Clone)]
struct Record {
    configuration_version: Option<u64>,
    bandwidths: Vec<BandwidthRecord>,
    states: Vec<StateRecord>,
}

#[derive(Serialize, Clone)]
struct BandwidthRecord {
    capacity: i64,
    kind: Kind,
    refill_tokens: i64,
    period_nanos: i64,
    initial_tokens: Option<i64>,
    id: Option<String>,
}

#[derive(Serialize, Clone)]
#[allow(dead_code)]
enum Kind {
    Greedy,
    Intervally,
    IntervallyAligned { first_refill_nanos: i64, adaptive_initial_tokens: bool },
    Unknown,
}

#[derive(Serialize, Clone)]
struct StateRecord {
    level: i128,
    last_refill_nanos: i64,
}

fn forge(record: &Record) -> Vec<u8> {
    let mut bytes = vec![b'E', b'B', FORMAT_VERSION];
    bytes.extend(postcard::to_allocvec(record).unwrap());
    bytes
}

fn valid_record(bandwidths: usize) -> Record {
    let bandwidth = |i: usize| BandwidthRecord {
        capacity: 10,
        kind: Kind::Greedy,
        refill_tokens: 1,
        period_nanos: SEC,
        initial_tokens: None,
        id: Some(format!("b{i}")),
    };
    Record {
        configuration_version: None,
        bandwidths: (0..bandwidths).map(bandwidth).collect(),
        states: (0..bandwidths).map(|_| StateRecord { level: 10 * SEC as i128, last_refill_nanos: 0 }).collect(),
    }
}

fn reason(bytes: &[u8]) -> String {
    match decode(bytes) {
        Err(Error::InvalidEncoding { reason }) => reason,
        other => panic!("expected InvalidEncoding, got {other:?}"),
    }
}

#[test]
fn forged_valid_record_decodes() {
    let decoded = decode(&forge(&valid_record(3))).unwrap();
    assert_eq!(decoded.bucket.get_available_tokens(0), 10);
}

#[test]
fn state_count_must_match_bandwidth_count() {
    let mut record = valid_record(3);
    record.states.pop();
    assert_eq!(reason(&forge(&record)), "2 states for a configuration of 3 bandwidths");
}

#[test]
fn configuration_rules_apply_to_decoded_bytes() {
    type Mutation = fn(&mut Record);
    let cases: Vec<(Mutation, &str)> = vec![
        (|r| r.bandwidths[0].capacity = 0, "capacity must be positive"),
        (|r| r.bandwidths[0].period_nanos = -1, "refill period must be positive"),
        (|r| r.bandwidths[0].refill_tokens = 2 * SEC, "too high a refill rate"),
        (|r| r.bandwidths[0].initial_tokens = Some(-1), "initial tokens must not be negative"),
        (|r| r.bandwidths[1].id = Some("b0".into()), "same id"),
        (
            |r| {
                r.bandwidths[0].kind =
                    Kind::IntervallyAligned { first_refill_nanos: -1, adaptive_initial_tokens: false }
            },
            "before the Unix epoch",
        ),
        (|r| r.bandwidths[0].kind = Kind::Unknown, "malformed payload"),
        (
            |r| {
                r.bandwidths.clear();
                r.states.clear();
            },
            "at least one bandwidth",
        ),
    ];
    for (mutate, expected) in cases {
        let mut record = valid_record(2);
        mutate(&mut record);
        let reason = reason(&forge(&record));
        assert!(reason.contains(expected), "{reason:?} should mention {expected:?}");
    }
}

#[test]
fn token_levels_beyond_64_bits_are_rejected() {
    let mut record = valid_record(1);
    record.states[0].level = (i64::MAX as i128 + 1) * SEC as i128;
    assert!(reason(&forge(&record)).contains("out of range"));
    record.states[0].level = i64::MIN as i128 * SEC as i128;
    assert!(decode(&forge(&record)).is_ok(), "the lowest representable debt is valid");
    record.states[0].level = i128::MIN;
    assert!(reason(&forge(&record)).contains("out of range"));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode(&bytes);
    }

    #[test]
    fn arbitrary_bytes_after_a_valid_header_never_panic(body in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut bytes = vec![b'E', b'B', FORMAT_VERSION];
        bytes.extend(body);
        if let Ok(decoded) = decode(&bytes) {
            // Whatever decodes is a usable bucket that round-trips.
            let again = decode(&encode(&decoded.bucket, decoded.configuration_version)).unwrap();
            prop_assert_eq!(again, decoded);
        }
    }

    #[test]
    fn mutated_encodings_never_panic_and_what_decodes_is_usable(
        index in any::<prop::sample::Index>(),
        value in any::<u8>(),
        now in any::<i64>(),
    ) {
        let mut bytes = encode(&sample(), Some(5));
        let i = index.index(bytes.len());
        bytes[i] = value;
        if let Ok(mut decoded) = decode(&bytes) {
            let bucket = &mut decoded.bucket;
            let _ = bucket.try_consume_and_return_remaining(1, now);
            let _ = bucket.consume_ignoring_rate_limits(3, now);
            let _ = bucket.diagnostics(now);
        }
    }
}
