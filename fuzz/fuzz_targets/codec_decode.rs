//! Any bytes: decoding never panics, and whatever decodes is a working bucket that re-encodes
//! to bytes decoding to the same bucket.
#![no_main]

use edgebucket::codec::{decode, encode};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|bytes: &[u8]| {
    let Ok(mut decoded) = decode(bytes) else { return };
    let again = decode(&encode(&decoded.bucket, decoded.configuration_version)).expect("re-encoded bytes decode");
    assert_eq!(again, decoded);
    // Exercise the operations on whatever state the bytes held, at extreme and ordinary times.
    for now in [i64::MIN, -1, 0, 1_795_280_400_000_000_000, i64::MAX] {
        let bucket = &mut decoded.bucket;
        let _ = bucket.try_consume_and_return_remaining(1, now);
        let _ = bucket.estimate_ability_to_consume(i64::MAX, now);
        let _ = bucket.consume_ignoring_rate_limits(7, now);
        let _ = bucket.reserve(3, i64::MAX, now);
        let _ = bucket.force_add_tokens(i64::MAX, now);
        let _ = bucket.diagnostics(now);
    }
});
