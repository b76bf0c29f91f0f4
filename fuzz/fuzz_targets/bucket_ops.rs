//! Any stored row: bytes that `codec::decode` accepts are a bucket safe for every operation at
//! any time. Two ways in: raw bytes (as a corrupted row), and a structured record in the codec's
//! own layout whose fields are drawn near their edges (levels within the 64-bit token check,
//! last refills far in the past or future, extreme capacities and periods), since random bytes
//! rarely make it through postcard. Then up to 24 operations (see `common`).
#![no_main]

#[path = "common/mod.rs"]
mod common;

use common::*;
use edgebucket::{codec, RefillKind};
use libfuzzer_sys::arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde::Serialize;

// The codec's record, field for field (src/core/codec.rs), so postcard writes the same layout.
#[derive(Serialize)]
struct Record {
    configuration_version: Option<u64>,
    bandwidths: Vec<BandwidthRecord>,
    states: Vec<StateRecord>,
}

#[derive(Serialize)]
struct BandwidthRecord {
    capacity: i64,
    kind: KindRecord,
    refill_tokens: i64,
    period_nanos: i64,
    initial_tokens: Option<i64>,
    id: Option<String>,
}

#[derive(Serialize)]
enum KindRecord {
    Greedy,
    Intervally,
    IntervallyAligned { first_refill_nanos: i64, adaptive_initial_tokens: bool },
}

#[derive(Serialize)]
struct StateRecord {
    level: i128,
    last_refill_nanos: i64,
}

fn level(u: &mut Unstructured, f: &BandwidthFields) -> Result<i128> {
    let period = f.period_nanos.max(1) as i128;
    if u.ratio(1u8, 8)? {
        return Ok(*u.choose(&[i128::MIN, i128::MAX, i128::MIN / 2, i128::MAX / 2, 0, -1])?);
    }
    let whole = pick(
        u,
        &[i64::MIN, i64::MIN + 1, -1, 0, 1, f.capacity.saturating_sub(1), f.capacity, f.capacity.saturating_add(1), i64::MAX - 1, i64::MAX],
    )? as i128;
    let fraction = match u.int_in_range(0..=3u8)? {
        0 => 0,
        1 => period - 1,
        2 => u.int_in_range(0..=period - 1)?,
        _ => *u.choose(&[-1, period, 1])?,
    };
    Ok(whole * period + fraction)
}

fn structured(u: &mut Unstructured, anchors: &mut Vec<i64>) -> Result<Vec<u8>> {
    let n = u.int_in_range(1..=4usize)?;
    let mut bandwidths = Vec::new();
    let mut states = Vec::new();
    for _ in 0..n {
        let f = pick_bandwidth_fields(u)?;
        let level = level(u, &f)?;
        let last_refill_nanos = pick_time(u, anchors)?;
        anchors.push(last_refill_nanos);
        let kind = match f.kind {
            RefillKind::Greedy => KindRecord::Greedy,
            RefillKind::Intervally => KindRecord::Intervally,
            RefillKind::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens } => {
                anchors.push(first_refill_nanos);
                KindRecord::IntervallyAligned { first_refill_nanos, adaptive_initial_tokens }
            }
        };
        bandwidths.push(BandwidthRecord {
            capacity: f.capacity,
            kind,
            refill_tokens: f.refill_tokens,
            period_nanos: f.period_nanos,
            initial_tokens: f.initial_tokens,
            id: f.id,
        });
        states.push(StateRecord { level, last_refill_nanos });
    }
    let record = Record { configuration_version: u.arbitrary()?, bandwidths, states };
    let mut bytes = b"EB".to_vec();
    bytes.push(codec::FORMAT_VERSION);
    Ok(postcard::to_extend(&record, bytes).expect("postcard encodes into a Vec"))
}

fn run(data: &[u8]) -> Result<()> {
    let mut u = Unstructured::new(data);
    let mut anchors = Vec::new();
    let bytes = if u.ratio(1u8, 4)? {
        let len = u.int_in_range(0..=200usize)?;
        u.bytes(len)?.to_vec()
    } else {
        structured(&mut u, &mut anchors)?
    };
    let Ok(decoded) = codec::decode(&bytes) else { return Ok(()) };
    run_operations(&mut u, decoded.bucket, &mut anchors)
}

fuzz_target!(|data: &[u8]| {
    let _ = run(data);
});
