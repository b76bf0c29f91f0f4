//! Configurations from and to JS objects in the core's JSON schema.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use super::errors::BindingError;
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
    pub fn new(spec: JsValue) -> Result<RawConfiguration, JsValue> {
        let spec: ConfigurationSpec = serde_wasm_bindgen::from_value(spec)
            .map_err(|e| BindingError::from(Error::InvalidConfiguration { reason: e.to_string() }))?;
        let configuration = BucketConfiguration::try_from(spec).map_err(BindingError::from)?;
        Ok(RawConfiguration { configuration })
    }

    /// The configuration in the schema, durations as humantime strings. Integers are numbers,
    /// or all BigInts if one is beyond 2^53.
    #[wasm_bindgen(js_name = toJSON)]
    pub fn to_json(&self) -> Result<JsValue, JsValue> {
        let spec = ConfigurationSpec::from(&self.configuration);
        let plain = serde_wasm_bindgen::Serializer::json_compatible();
        spec.serialize(&plain)
            .or_else(|_| spec.serialize(&plain.serialize_large_number_types_as_bigints(true)))
            .map_err(|e| BindingError::InvalidArgument(e.to_string()).into())
    }

    /// True when both describe the same limits.
    pub fn equals(&self, other: &RawConfiguration) -> bool {
        self.configuration == other.configuration
    }

    /// Number of bandwidths.
    #[wasm_bindgen(getter)]
    pub fn length(&self) -> u32 {
        self.configuration.bandwidths().len() as u32
    }
}

/// A strategy by its name (`RESET`, `PROPORTIONALLY`, `AS_IS`, `ADDITIVE`).
pub(crate) fn strategy(name: &str) -> Result<TokensInheritanceStrategy, BindingError> {
    TokensInheritanceStrategy::from_name(name).ok_or_else(|| {
        BindingError::InvalidArgument(format!(
            "unknown tokens inheritance strategy {name:?}: expected RESET, PROPORTIONALLY, AS_IS or ADDITIVE"
        ))
    })
}
