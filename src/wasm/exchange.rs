//! The area of wasm memory through which hot operations exchange numbers and key bytes with JS
//! without allocating: JS writes a key's bytes (and BigInt arguments) here, Rust leaves result
//! numbers here, and a call returns only a status.
//!
//! Layout (offsets from [`exchange_address`], all little-endian):
//! - `0`: [`SLOTS`] `f64` numbers. A result that is a safe integer, or `±Infinity` for
//!   [`INFINITY_DURATION`](crate::INFINITY_DURATION) waits, is the number itself; a result
//!   beyond 2^53 is `NaN` here and exact in the `i64` of the same slot.
//! - `8 × SLOTS`: [`SLOTS`] `i64`: exact results beyond 2^53, and BigInt arguments from JS.
//! - `16 × SLOTS`: [`SLOTS`] `u32` flags: JS sets one to 1 beside a BigInt argument (and passes
//!   `NaN` as the number); Rust clears it when it takes the argument, except the time's: one JS
//!   operation passes the time it read to several calls (diagnostics, a verbose result), and JS
//!   clears that flag itself whenever it passes a `NaN` number.
//! - `20 × SLOTS`: [`KEY_BYTES`] bytes: the key of a store operation.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;

use super::errors::BindingError;
use crate::core::store::MAX_KEY_BYTES;

/// Number slots (results and arguments).
pub const SLOTS: usize = 16;
/// Room for the longest key and one byte more: JS's `encodeInto` fills its view of the room, and
/// a key that reaches the last byte is too long.
pub const KEY_BYTES: usize = MAX_KEY_BYTES + 1;

/// Status: the operation's answer was no (or `None`).
pub const STATUS_FALSE: u32 = 0;
/// Status: the operation's answer was yes, or it succeeded; results, if any, are in the exchange.
pub const STATUS_TRUE: u32 = 1;
/// Status: the operation failed; [`take_error`](super::errors::take_error) has the error.
pub const STATUS_ERROR: u32 = 2;
/// Status: a store key needs a configuration (see [`BucketStore::supply`](crate::BucketStore::supply)).
pub const STATUS_NEEDS_CONFIGURATION: u32 = 3;

/// Argument slot of a token count or limit given as a BigInt.
pub const ARG_TOKENS: usize = 0;
/// Argument slot of the time given as a BigInt: the last, which no result uses. One JS operation
/// passes its time to several calls, and a result past 2^53 left in a shared slot would be read
/// back as the time by the next.
pub const ARG_TIME: usize = SLOTS - 1;
/// Argument slot of a maximum wait given as a BigInt.
pub const ARG_WAIT: usize = 2;
/// Argument slot of the tokens still owed to waiting reservations, given as a BigInt.
pub const ARG_OWED: usize = 3;

/// The largest integer a JS number holds exactly (`Number.MAX_SAFE_INTEGER`).
pub(crate) const MAX_SAFE: f64 = 9_007_199_254_740_991.0;

#[repr(C)]
struct Exchange {
    numbers: [f64; SLOTS],
    integers: [i64; SLOTS],
    given: [u32; SLOTS],
    key: [u8; KEY_BYTES],
}

thread_local! {
    static EXCHANGE: RefCell<Exchange> = const {
        RefCell::new(Exchange { numbers: [0.0; SLOTS], integers: [0; SLOTS], given: [0; SLOTS], key: [0; KEY_BYTES] })
    };
}

/// Where the exchange area starts in wasm memory.
#[wasm_bindgen(js_name = exchangeAddress)]
pub fn exchange_address() -> u32 {
    EXCHANGE.with(|e| e.as_ptr() as usize as u32)
}

/// [`KEY_BYTES`], from which JS sizes its view of the key room and the longest key it writes, so
/// that the two sides cannot disagree.
#[wasm_bindgen(js_name = exchangeKeyBytes)]
pub fn exchange_key_bytes() -> u32 {
    KEY_BYTES as u32
}

/// The wasm memory, for the JS views of the exchange area.
#[wasm_bindgen(js_name = wasmMemory)]
pub fn wasm_memory() -> JsValue {
    wasm_bindgen::memory()
}

/// Leaves `value` in slot `slot`: the number if exact, else `NaN` and the `i64`.
#[inline]
pub(crate) fn put(slot: usize, value: i64) {
    debug_assert!(slot < ARG_TIME, "results never use the time's slot");
    EXCHANGE.with(|e| {
        let mut e = e.borrow_mut();
        if (-MAX_SAFE as i64..=MAX_SAFE as i64).contains(&value) {
            e.numbers[slot] = value as f64;
        } else {
            e.numbers[slot] = f64::NAN;
            e.integers[slot] = value;
        }
    });
}

/// As [`put`], with [`INFINITY_DURATION`](crate::INFINITY_DURATION) as `Infinity`.
#[inline]
pub(crate) fn put_nanos(slot: usize, nanos: i64) {
    if nanos == crate::INFINITY_DURATION {
        EXCHANGE.with(|e| e.borrow_mut().numbers[slot] = f64::INFINITY);
    } else {
        put(slot, nanos);
    }
}

/// An integer argument: a safe-integer `value`, or, when it is `NaN` and JS flagged `slot`, the
/// BigInt JS left there. `what` names it in errors.
#[inline]
pub(crate) fn integer(value: f64, slot: usize, what: &str) -> Result<i64, BindingError> {
    if value.fract() == 0.0 && value.abs() <= MAX_SAFE {
        return Ok(value as i64);
    }
    big_integer(value, slot, what)
}

/// [`integer`] past the safe-integer case, out of line so that the hot path stays small.
#[cold]
#[inline(never)]
fn big_integer(value: f64, slot: usize, what: &str) -> Result<i64, BindingError> {
    if value.is_nan() {
        if let Some(big) = take_big(slot) {
            return Ok(big);
        }
    }
    Err(BindingError::InvalidArgument(format!(
        "{what} must be an integer (a safe integer number or a BigInt), got {}",
        crate::core::duration::describe_number(value)
    )))
}

/// The BigInt argument JS left in `slot`, if it flagged one.
pub(crate) fn take_big(slot: usize) -> Option<i64> {
    EXCHANGE.with(|e| {
        let mut e = e.borrow_mut();
        (std::mem::take(&mut e.given[slot]) == 1).then_some(e.integers[slot])
    })
}

/// The BigInt time JS left in [`ARG_TIME`], if it flagged one; the flag stays (see the module
/// docs).
pub(crate) fn given_time() -> Option<i64> {
    EXCHANGE.with(|e| {
        let e = e.borrow();
        (e.given[ARG_TIME] == 1).then_some(e.integers[ARG_TIME])
    })
}

/// Clears every BigInt flag: an operation that failed may not have taken its arguments, and a
/// flag left behind must not turn a later `NaN` into a stale BigInt.
pub(crate) fn clear_given() {
    EXCHANGE.with(|e| e.borrow_mut().given = [0; SLOTS]);
}

/// Runs `f` on the first `len` key bytes JS wrote.
#[inline]
pub(crate) fn with_key<T>(len: u32, f: impl FnOnce(&[u8]) -> T) -> T {
    EXCHANGE.with(|e| f(&e.borrow().key[..(len as usize).min(KEY_BYTES)]))
}

/// Turns an operation's outcome into a status, leaving any error for JS.
#[inline]
pub(crate) fn status(outcome: Result<bool, BindingError>) -> u32 {
    match outcome {
        Ok(true) => STATUS_TRUE,
        Ok(false) => STATUS_FALSE,
        Err(error) => {
            super::errors::leave(error);
            STATUS_ERROR
        }
    }
}
