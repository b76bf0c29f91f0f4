//! Configurations from and to JS objects in the core's JSON schema.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::errors::{serde_message, BindingError};
use crate::{BucketConfiguration, ConfigurationSpec, Error, TokensInheritanceStrategy};

/// A validated configuration held in wasm memory.
#[wasm_bindgen(js_name = RawConfiguration)]
#[derive(Debug, Clone)]
pub struct RawConfiguration {
    pub(crate) configuration: BucketConfiguration,
}

#[wasm_bindgen(js_class = RawConfiguration)]
impl RawConfiguration {
    /// Reads `spec` (`{ bandwidths: [...] }`) and applies every rule of the core.
    ///
    /// # Errors
    /// The core's code for a broken rule (`NON_POSITIVE_CAPACITY`, `INVALID_DURATION`, …);
    /// `INVALID_CONFIGURATION` for a malformed object.
    #[wasm_bindgen(constructor)]
    pub fn new(input: JsValue) -> Result<RawConfiguration, JsValue> {
        let invalid = |reason: String| BindingError::from(Error::InvalidConfiguration { reason });
        require_bandwidths_array(&input).map_err(invalid)?;
        let spec: ConfigurationSpec =
            serde_wasm_bindgen::from_value(input.clone()).map_err(|e| invalid(serde_message(e)))?;
        reject_unknown_fields(&input, &to_js(&spec)?, "configuration").map_err(invalid)?;
        let configuration = BucketConfiguration::try_from(spec).map_err(BindingError::from)?;
        Ok(RawConfiguration { configuration })
    }

    /// The configuration in the schema, durations as humantime strings. Integers are numbers,
    /// or all BigInts if one is beyond 2^53.
    #[wasm_bindgen(js_name = toJSON)]
    pub fn to_json(&self) -> Result<JsValue, JsValue> {
        Ok(to_js(&ConfigurationSpec::from(&self.configuration))?)
    }

    /// True when both describe the same limits.
    pub fn equals(&self, other: &RawConfiguration) -> bool {
        self.configuration == other.configuration
    }
}

/// `spec` as a plain JS object; integers as numbers, or all as BigInts if one is beyond 2^53
/// (JS turns the safe ones back into numbers: `exactNumbers` in `js/configuration.js`).
fn to_js(spec: &ConfigurationSpec) -> Result<JsValue, BindingError> {
    let plain = serde_wasm_bindgen::Serializer::json_compatible();
    spec.serialize(&plain)
        .or_else(|_| spec.serialize(&plain.serialize_large_number_types_as_bigints(true)))
        .map_err(|e| BindingError::InvalidArgument(serde_message(e)))
}

/// serde-wasm-bindgen reads only the fields a struct declares, so the schema's
/// `deny_unknown_fields` never sees a misspelt `initalTokens`. Every field of `input` must
/// therefore survive the round trip into `parsed` (the spec written back), at every depth.
fn reject_unknown_fields(input: &JsValue, parsed: &JsValue, at: &str) -> Result<(), String> {
    if js_sys::Array::is_array(input) {
        let (input, parsed) = (js_sys::Array::from(input), js_sys::Array::from(parsed));
        for i in 0..input.length() {
            reject_unknown_fields(&input.get(i), &parsed.get(i), &format!("{at}[{i}]"))?;
        }
    } else if input.is_object() && parsed.is_object() {
        for key in js_sys::Object::keys(input.unchecked_ref::<js_sys::Object>()).iter() {
            let value = js_sys::Reflect::get(input, &key).unwrap_or(JsValue::UNDEFINED);
            let name = key.as_string().unwrap_or_default();
            // An absent field, as serde_json reads `null` for an optional one (a required one
            // set to null was refused above). Unlike serde_json's `deny_unknown_fields`, this lets
            // a misspelt field through when it is null, which means what leaving it out means.
            if value.is_undefined() || value.is_null() {
                continue;
            }
            // Its own field: `toString`, `constructor` or JSON's `__proto__` are on every object.
            if !js_sys::Object::has_own(parsed.unchecked_ref::<js_sys::Object>(), &key) {
                return Err(format!("unknown field `{name}` in {at}"));
            }
            let inner = js_sys::Reflect::get(parsed, &key).unwrap_or(JsValue::UNDEFINED);
            reject_unknown_fields(&value, &inner, &format!("{at}.{name}"))?;
        }
    }
    Ok(())
}

/// serde-wasm-bindgen reads anything but an array as a sequence through the iterator protocol,
/// so `bandwidths: 5` would be refused with the runtime's `TypeError` about `Reflect.get`.
fn require_bandwidths_array(input: &JsValue) -> Result<(), String> {
    if !input.is_object() {
        return Ok(()); // serde's own message says what a configuration is
    }
    let bandwidths = js_sys::Reflect::get(input, &"bandwidths".into()).unwrap_or(JsValue::UNDEFINED);
    if bandwidths.is_undefined() || js_sys::Array::is_array(&bandwidths) {
        return Ok(()); // a missing field is serde's to report
    }
    Err("bandwidths must be an array of bandwidths".into())
}

/// A strategy by its name (`RESET`, `PROPORTIONALLY`, `AS_IS`, `ADDITIVE`).
pub(crate) fn strategy(name: &str) -> Result<TokensInheritanceStrategy, BindingError> {
    TokensInheritanceStrategy::from_name(name).ok_or_else(|| {
        BindingError::InvalidArgument(format!(
            "unknown tokens inheritance strategy \"{name}\": expected RESET, PROPORTIONALLY, AS_IS or ADDITIVE"
        ))
    })
}
