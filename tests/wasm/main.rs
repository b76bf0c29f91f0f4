//! The wasm bindings in a real JS engine (wasm-bindgen-test): Node by default, headless
//! Chromium with `WASM_BINDGEN_USE_BROWSER=1` (see `make wasm-test`).
//!
//! Results are read back the way the JS package reads them: through typed-array views of the
//! exchange area in wasm memory, so these tests also pin its layout.
#![cfg(all(target_arch = "wasm32", feature = "wasm"))]

use edgebucket::wasm::bucket::RawBucket;
use edgebucket::wasm::configuration::RawConfiguration;
use edgebucket::wasm::errors::{set_error_class, take_error};
use edgebucket::wasm::exchange::{
    exchange_address, wasm_memory, ARG_TIME, ARG_WAIT, SLOTS, STATUS_ERROR, STATUS_FALSE, STATUS_NEEDS_CONFIGURATION,
    STATUS_TRUE,
};
use edgebucket::wasm::store::{hash_seed, RawStore};
use edgebucket::wasm::time::duration_nanos_js;
use js_sys::{BigInt64Array, Float64Array, Reflect, Uint32Array, Uint8Array, JSON};
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_test::wasm_bindgen_test;

const MS: f64 = 1_000_000.0;

fn buffer() -> js_sys::ArrayBuffer {
    wasm_memory().unchecked_into::<js_sys::WebAssembly::Memory>().buffer().unchecked_into()
}

/// Result slot `i` as JS reads it: the number, or the exact BigInt when the number is NaN.
fn number(i: u32) -> f64 {
    Float64Array::new_with_byte_offset_and_length(&buffer(), exchange_address(), SLOTS as u32).get_index(i)
}

fn integer(i: u32) -> i64 {
    let view =
        BigInt64Array::new_with_byte_offset_and_length(&buffer(), exchange_address() + 8 * SLOTS as u32, SLOTS as u32);
    view.get_index(i)
}

/// Leaves a BigInt argument in slot `i`, as the JS package does.
fn give(i: u32, value: i64) {
    let base = exchange_address();
    BigInt64Array::new_with_byte_offset_and_length(&buffer(), base + 8 * SLOTS as u32, SLOTS as u32)
        .set_index(i, value);
    Uint32Array::new_with_byte_offset_and_length(&buffer(), base + 16 * SLOTS as u32, SLOTS as u32).set_index(i, 1);
}

/// Clears the BigInt flag of slot `i`, as the JS package does when it passes a NaN number.
fn clear_flag(i: u32) {
    let base = exchange_address();
    Uint32Array::new_with_byte_offset_and_length(&buffer(), base + 16 * SLOTS as u32, SLOTS as u32).set_index(i, 0);
}

fn write_key(key: &str) -> u32 {
    let view = Uint8Array::new_with_byte_offset_and_length(
        &buffer(),
        exchange_address() + 20 * SLOTS as u32,
        key.len() as u32,
    );
    view.copy_from(key.as_bytes());
    key.len() as u32
}

fn code_of(error: &JsValue) -> String {
    Reflect::get(error, &"code".into()).unwrap().as_string().unwrap()
}

fn config(json: &str) -> Result<RawConfiguration, JsValue> {
    RawConfiguration::new(JSON::parse(json).unwrap())
}

fn ten_per_second() -> RawConfiguration {
    config(r#"{"bandwidths":[{"capacity":10,"refill":{"kind":"greedy","tokens":10,"period":"1s"}}]}"#).unwrap()
}

#[wasm_bindgen_test]
fn try_consume_returns_statuses_and_probes_leave_numbers() {
    let mut bucket = RawBucket::new(&ten_per_second(), false, 0.0, 0.0).unwrap();
    assert_eq!(bucket.try_consume(10.0, 0.0), STATUS_TRUE);
    assert_eq!(bucket.try_consume(1.0, 0.0), STATUS_FALSE);
    assert_eq!(bucket.try_consume_and_return_remaining(2.0, 150.0 * MS), STATUS_FALSE);
    assert_eq!([number(0), number(1), number(2)], [1.0, 50.0 * MS, 850.0 * MS]);
    assert_eq!(bucket.estimate_ability_to_consume(11.0, 150.0 * MS), STATUS_FALSE);
    assert_eq!(number(1), f64::INFINITY, "beyond capacity: INFINITY_DURATION is Infinity");
}

#[wasm_bindgen_test]
fn bad_arguments_leave_an_error_with_the_core_code() {
    let mut bucket = RawBucket::new(&ten_per_second(), false, 0.0, 0.0).unwrap();
    for (tokens, code) in [
        (0.0, "NON_POSITIVE_TOKENS"),
        (-3.0, "NON_POSITIVE_TOKENS"),
        (1.5, "INVALID_ARGUMENT"),
        (f64::NAN, "INVALID_ARGUMENT"),
    ] {
        assert_eq!(bucket.try_consume(tokens, 0.0), STATUS_ERROR);
        assert_eq!(code_of(&take_error()), code, "tokens {tokens}");
    }
    assert_eq!(bucket.try_consume(10.0, 0.0), STATUS_TRUE, "nothing was consumed by the errors");
}

#[wasm_bindgen_test]
fn a_failed_operation_leaves_no_bigint_flag_behind() {
    // Found by mutation testing: the maximum wait's BigInt is not taken when the tokens fail
    // first, and its flag left set would turn a later NaN into that stale wait.
    let mut bucket = RawBucket::new(&ten_per_second(), false, 0.0, 0.0).unwrap();
    give(ARG_WAIT as u32, 5_000_000_000);
    assert_eq!(bucket.reserve(1.5, f64::NAN, 0.0), STATUS_ERROR);
    assert_eq!(code_of(&take_error()), "INVALID_ARGUMENT");
    assert_eq!(bucket.reserve(1.0, f64::NAN, 0.0), STATUS_ERROR, "a NaN without a BigInt is an error");
    assert_eq!(code_of(&take_error()), "INVALID_ARGUMENT");
    assert_eq!(bucket.try_consume(10.0, 0.0), STATUS_TRUE, "nothing was reserved");
}

#[wasm_bindgen_test]
fn errors_are_made_of_the_registered_class() {
    let class =
        js_sys::Function::new_with_args("code, message", "this.code = code; this.message = message; this.mine = true;");
    set_error_class(class);
    let error =
        config(r#"{"bandwidths":[{"capacity":0,"refill":{"kind":"greedy","tokens":1,"period":"1s"}}]}"#).unwrap_err();
    assert_eq!(code_of(&error), "NON_POSITIVE_CAPACITY");
    assert_eq!(Reflect::get(&error, &"mine".into()).unwrap(), JsValue::TRUE);
}

#[wasm_bindgen_test]
fn unknown_fields_are_rejected_although_serde_wasm_bindgen_skips_them() {
    let misspelt =
        r#"{"bandwidths":[{"capacity":1,"initalTokens":1,"refill":{"kind":"greedy","tokens":1,"period":"1s"}}]}"#;
    let error = config(misspelt).unwrap_err();
    assert_eq!(code_of(&error), "INVALID_CONFIGURATION");
    let nested = r#"{"bandwidths":[{"capacity":1,"refill":{"kind":"greedy","tokens":1,"period":{"seconds":1,"fortnights":2}}}]}"#;
    assert_eq!(code_of(&config(nested).unwrap_err()), "INVALID_CONFIGURATION");
    assert!(config(r#"{"bandwidths":[{"capacity":1,"refill":{"kind":"greedy","tokens":1,"period":{"seconds":1}}}]}"#)
        .is_ok());
}

#[wasm_bindgen_test]
fn times_in_milliseconds_fractions_and_bigint_nanoseconds() {
    // Milliseconds: exact for whole epoch milliseconds.
    let epoch_ms = 1_763_740_800_000.0;
    let mut bucket = RawBucket::new(&ten_per_second(), true, 0.0, epoch_ms).unwrap();
    assert_eq!(bucket.try_consume(10.0, epoch_ms), STATUS_TRUE);
    assert_eq!(bucket.try_consume(1.0, epoch_ms + 99.0), STATUS_FALSE);
    assert_eq!(bucket.try_consume(1.0, epoch_ms + 100.0), STATUS_TRUE);
    // Fractional milliseconds after an origin (the nanosecond clock): to the nanosecond.
    let mut fine = RawBucket::new(&ten_per_second(), true, 1_763_740_800_123.5, 0.0).unwrap();
    fine.try_consume(10.0, 0.0);
    assert_eq!(fine.try_consume(1.0, 99.999_999), STATUS_FALSE);
    assert_eq!(fine.try_consume(1.0, 100.0), STATUS_TRUE);
    // Nanoseconds beyond 2^53 come as a BigInt, with NaN in the number's place.
    let start = 1_763_740_800_000_000_000i64;
    give(ARG_TIME as u32, start);
    let mut exact = RawBucket::new(&ten_per_second(), false, 0.0, f64::NAN).unwrap();
    give(ARG_TIME as u32, start);
    assert_eq!(exact.try_consume(10.0, f64::NAN), STATUS_TRUE);
    give(ARG_TIME as u32, start + 100_000_000 - 1);
    assert_eq!(exact.try_consume(1.0, f64::NAN), STATUS_FALSE);
    give(ARG_TIME as u32, start + 100_000_000);
    assert_eq!(exact.try_consume(1.0, f64::NAN), STATUS_TRUE);
    // The time stays for the other calls of one JS operation (diagnostics, verbose results).
    assert_eq!(exact.try_consume(1.0, f64::NAN), STATUS_FALSE, "the same instant again: no token yet");
    // JS clears the flag whenever it passes a NaN number.
    clear_flag(ARG_TIME as u32);
    assert_eq!(exact.try_consume(1.0, f64::NAN), STATUS_ERROR, "a NaN without a BigInt is an error");
    assert_eq!(code_of(&take_error()), "INVALID_ARGUMENT");
}

/// Found by mutation testing: no test reached the clock's range checks or a fraction's nanoseconds.
#[wasm_bindgen_test]
fn times_past_the_range_are_errors_and_fractions_are_exact() {
    let error = |status| {
        assert_eq!(status, STATUS_ERROR);
        assert_eq!(code_of(&take_error()), "INVALID_ARGUMENT");
    };
    let mut bucket = RawBucket::new(&ten_per_second(), true, 0.0, 0.0).unwrap();
    // Whole milliseconds past 2^63 nanoseconds (year 2262): an error, not a wrapped time.
    let past_2262 = (i64::MAX / 1_000_000 + 1) as f64;
    error(bucket.try_consume(1.0, past_2262));
    error(bucket.try_consume(1.0, -past_2262));
    // Fractional milliseconds up to 9.2 × 10^12 are read, beyond it refused.
    assert_eq!(bucket.try_consume(1.0, 9.2e12 + 0.5), STATUS_TRUE);
    error(bucket.try_consume(1.0, 9.3e12 + 0.5));
    // In range, but past 2^63 nanoseconds once the origin is added.
    let mut late = RawBucket::new(&ten_per_second(), true, 9.2e12, 0.0).unwrap();
    error(late.try_consume(1.0, 3e11));
    // A fraction of a millisecond is kept to the nanosecond: 0.5 ms to the next token.
    let mut fine = RawBucket::new(&ten_per_second(), true, 0.0, 0.0).unwrap();
    assert_eq!(fine.try_consume(10.0, 0.0), STATUS_TRUE);
    assert_eq!(fine.try_consume_and_return_remaining(1.0, 99.5), STATUS_FALSE);
    assert_eq!(number(1), 500_000.0);
}

#[wasm_bindgen_test]
fn results_beyond_2_pow_53_are_exact_integers() {
    let big =
        r#"{"bandwidths":[{"capacity":1152921504606846976,"refill":{"kind":"greedy","tokens":1,"period":"1s"}}]}"#;
    let spec = JSON::parse(big).unwrap(); // JSON numbers lose precision: pass a BigInt instead
    let bandwidth = js_sys::Array::from(&Reflect::get(&spec, &"bandwidths".into()).unwrap()).get(0);
    Reflect::set(&bandwidth, &"capacity".into(), &js_sys::BigInt::from(1i64 << 60).into()).unwrap();
    let bucket = RawBucket::new(&RawConfiguration::new(spec).unwrap(), false, 0.0, 0.0).unwrap();
    assert_eq!(bucket.get_available_tokens(0.0), STATUS_TRUE);
    assert!(number(0).is_nan());
    assert_eq!(integer(0), 1 << 60);
}

#[wasm_bindgen_test]
fn durations_are_read_by_the_core_parser() {
    duration_nanos_js("250ms".into()).unwrap();
    assert_eq!(number(0), 250.0 * MS);
    duration_nanos_js(JSON::parse(r#"{"minutes":1,"seconds":30}"#).unwrap()).unwrap();
    assert_eq!(number(0), 90_000.0 * MS);
    assert_eq!(code_of(&duration_nanos_js("1 fortnight".into()).unwrap_err()), "INVALID_DURATION");
    assert_eq!(code_of(&duration_nanos_js((-5.0).into()).unwrap_err()), "INVALID_DURATION");
}

#[wasm_bindgen_test]
fn every_store_gets_a_random_hash_seed() {
    // Found by mutation testing: a fixed seed passed every test, and would let clients compute
    // keys that all collide. A false failure needs two equal draws of 64 random bits: about 2^-63.
    let seeds = [hash_seed(), hash_seed(), hash_seed()];
    assert!(seeds[0] != seeds[1] && seeds[1] != seeds[2], "{seeds:?}");
}

#[wasm_bindgen_test]
fn a_store_asks_for_configurations_it_lacks() {
    const GIB: f64 = 1_073_741_824.0;
    let mut store = RawStore::new(f64::INFINITY, GIB, 0.into(), false, 0.0).unwrap();
    store.configure_supplied(0.0, "RESET").unwrap();
    let key = write_key("alice");
    assert_eq!(store.try_consume(key, 1.0, 0.0), STATUS_NEEDS_CONFIGURATION);
    store.supply(write_key("alice"), &ten_per_second(), 0.0).unwrap();
    assert_eq!(store.try_consume(write_key("alice"), 10.0, 0.0), STATUS_TRUE);
    assert_eq!(store.try_consume(write_key("alice"), 1.0, 0.0), STATUS_FALSE);
    assert_eq!(store.try_consume_and_return_remaining(write_key("alice"), 1.0, 100.0 * MS), STATUS_TRUE);
    assert_eq!([number(0), number(1), number(2)], [0.0, 0.0, 1000.0 * MS]);
    assert_eq!(store.size(), 1.0);
    assert!(store.has(write_key("alice")) && !store.has(write_key("bob")));
    assert_eq!(code_of(&store.configure_supplied(1.0, "SOMETIMES").unwrap_err()), "INVALID_ARGUMENT");
    for max_keys in [0.0, -1.0, 4_294_967_297.0] {
        assert_eq!(
            code_of(&RawStore::new(max_keys, GIB, 0.into(), false, 0.0).unwrap_err()),
            "INVALID_ARGUMENT",
            "{max_keys}"
        );
    }
    for max_key_bytes in [65_535.0, 4.0 * GIB + 1.0, f64::NAN, -GIB] {
        assert_eq!(
            code_of(&RawStore::new(10.0, max_key_bytes, 0.into(), false, 0.0).unwrap_err()),
            "INVALID_ARGUMENT",
            "{max_key_bytes}"
        );
    }
}

/// Products of a count and a period, which on wasm skip the 128-bit multiplication when they
/// fit in 64 bits: the native tests never take that path.
#[wasm_bindgen_test]
fn scaled_counts_are_exact_on_both_sides_of_64_bits() {
    use edgebucket::{Bandwidth, BucketConfiguration, RefillKind, TokenBucket};
    let edges = [1, 2, 3, (1 << 32) - 1, 1 << 32, 1 << 40, 1 << 62, i64::MAX];
    for capacity in edges {
        for period in edges {
            let limit = Bandwidth::builder()
                .capacity(capacity)
                .refill_nanos(RefillKind::Greedy, 1, period as i128)
                .build()
                .unwrap();
            let mut bucket = TokenBucket::new(BucketConfiguration::new(vec![limit]).unwrap(), 0);
            assert_eq!(bucket.try_consume(capacity, 0), Ok(true), "{capacity} every {period} ns");
            assert_eq!(bucket.get_available_tokens(0), 0, "{capacity} every {period} ns");
        }
    }
}
