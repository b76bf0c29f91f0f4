//! Bucket keys: one Durable Object per key (`idFromName`). A key is 1 to 256 bytes of UTF-8
//! without control characters; in a URL path it is one percent-encoded segment.

use percent_encoding::percent_decode_str;

use super::errors::ApiError;

/// Longest key, in bytes.
pub const MAX_KEY_BYTES: usize = 256;

/// The start of every gateway bucket's key. Service calls (consume, reserve) cannot name such a
/// key, so a holder of the service key cannot drain or block a gateway user's bucket; admins can.
pub const GATEWAY_PREFIX: &str = "gateway:";

/// The key of a gateway bucket: `gateway:{policy}:{source}:{value}`, where `source` names what
/// the value was read from (`ip`, `header`, `apikey`, `segment`, `constant`).
pub fn gateway_key(policy: &str, source: &str, value: &str) -> String {
    format!("{GATEWAY_PREFIX}{policy}:{source}:{value}")
}

/// The policy a gateway bucket's key names (`gateway:{policy}:…`); `None` for other keys.
/// Policy names hold no `:`, so the first segment after the prefix is the whole name.
pub fn gateway_policy(key: &str) -> Option<&str> {
    key.strip_prefix(GATEWAY_PREFIX).and_then(|rest| rest.split(':').next())
}

/// Percent-decodes a path segment.
///
/// # Errors
/// 400 `INVALID_KEY` when the bytes are not UTF-8.
pub fn decode(segment: &str) -> Result<String, ApiError> {
    percent_decode_str(segment)
        .decode_utf8()
        .map(|key| key.into_owned())
        .map_err(|_| invalid("a key must be UTF-8 once percent-decoded"))
}

/// Returns `key` if it is usable.
///
/// # Errors
/// 400 `INVALID_KEY` for an empty or over-long key, or one with control characters.
pub fn check(key: &str) -> Result<String, ApiError> {
    if key.is_empty() {
        return Err(invalid("a key cannot be empty"));
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(invalid(format!("a key is at most {MAX_KEY_BYTES} bytes, got {}", key.len())));
    }
    if key.chars().any(char::is_control) {
        return Err(invalid("a key cannot contain control characters"));
    }
    Ok(key.to_owned())
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::bad_request("INVALID_KEY", message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_gateway_key_names_its_policy() {
        assert_eq!(gateway_policy("gateway:api:ip:2001:db8::/64"), Some("api"));
        assert_eq!(gateway_policy("gateway:api.v2:constant:all"), Some("api.v2"));
        assert_eq!(gateway_policy("user:42"), None);
    }

    #[test]
    fn keys_are_decoded_and_checked() {
        assert_eq!(decode("user%2F42%20%C3%A9").unwrap(), "user/42 é");
        assert_eq!(decode("%FF").unwrap_err().code, "INVALID_KEY");
        assert_eq!(check("a").unwrap(), "a");
        assert_eq!(check(&"k".repeat(MAX_KEY_BYTES)).unwrap().len(), MAX_KEY_BYTES);
        for bad in [String::new(), "k".repeat(MAX_KEY_BYTES + 1), "a\nb".into()] {
            assert_eq!(check(&bad).unwrap_err().code, "INVALID_KEY");
        }
    }
}
