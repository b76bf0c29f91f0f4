//! The incoming request, read straight from the runtime's object: only the parts a decision needs,
//! each fetched across the JavaScript boundary when asked for (workers-rs's `Request` reads the
//! `cf` object and more on every request, which costs a measurable share of a decision).

use worker::wasm_bindgen::JsCast;
use worker::wasm_bindgen_futures::JsFuture;
use worker::{js_sys, web_sys};

/// Bytes of an unwanted body read and dropped before answering. workerd closes the connection
/// after an answer that left the body unread, and a socket closed with unread data is reset,
/// which can destroy the answer on its way to an HTTP/1.1 client. Larger bodies are cut off.
pub const DRAIN_BYTES: usize = 64 * 1024;

/// A request as the runtime gave it.
#[derive(Debug)]
pub struct Incoming {
    raw: web_sys::Request,
    url: String,
}

impl Incoming {
    /// Wraps the runtime's request.
    pub fn new(raw: web_sys::Request) -> Self {
        let url = raw.url();
        Incoming { raw, url }
    }

    /// The method, as sent (upper case for the standard ones).
    pub fn method(&self) -> String {
        self.raw.method()
    }

    /// The path, still percent-encoded.
    pub fn path(&self) -> &str {
        split_url(&self.url).0
    }

    /// The query string without `?`, if any.
    pub fn query(&self) -> Option<&str> {
        split_url(&self.url).1
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<String> {
        self.raw.headers().get(name).ok().flatten()
    }

    /// The body's length as `Content-Length` declares it, if it does (a chunked body does not).
    pub fn declared_length(&self) -> Option<u64> {
        self.header("Content-Length").and_then(|v| v.parse().ok())
    }

    /// The body read chunk by chunk, or `None` once it passes `limit` bytes: a body of
    /// unannounced length (chunked) is refused without being held in memory whole. Past the
    /// limit, up to [`DRAIN_BYTES`] more are read and dropped before the rest is cancelled.
    ///
    /// # Errors
    /// When the body cannot be read.
    pub async fn bytes_up_to(&self, limit: usize) -> worker::Result<Option<Vec<u8>>> {
        let Some(stream) = self.raw.body() else {
            return Ok(Some(Vec::new()));
        };
        let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
        let mut body = Vec::new();
        let mut read = 0;
        loop {
            let chunk = JsFuture::from(reader.read()).await?;
            if js_sys::Reflect::get(&chunk, &"done".into())?.is_truthy() {
                return Ok((read <= limit).then_some(body));
            }
            let bytes: js_sys::Uint8Array = js_sys::Reflect::get(&chunk, &"value".into())?.unchecked_into();
            read += bytes.length() as usize;
            if read > limit {
                body = Vec::new();
                if read - limit > DRAIN_BYTES {
                    // The rest is not wanted; the promise only says when cancelling is done.
                    let _ = reader.cancel();
                    return Ok(None);
                }
                continue;
            }
            let start = body.len();
            body.resize(read, 0);
            bytes.copy_to(&mut body[start..]);
        }
    }

    /// Reads and drops a body no answer needs (up to [`DRAIN_BYTES`]) before an error is
    /// answered; see there.
    pub async fn drain(&self) {
        // A body announced larger would be cut off anyway: not worth reading any of it.
        if self.declared_length().is_some_and(|n| n > DRAIN_BYTES as u64) {
            return;
        }
        if self.raw.body().is_some_and(|stream| !stream.locked()) {
            let _ = self.bytes_up_to(0).await;
        }
    }

    /// The runtime's request, to forward.
    pub fn raw(&self) -> &web_sys::Request {
        &self.raw
    }
}

/// The path and query of an absolute URL as the runtime serializes it (`scheme://authority/…`).
fn split_url(url: &str) -> (&str, Option<&str>) {
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    let path_and_query = url[after_scheme..].find('/').map_or("/", |i| &url[after_scheme + i..]);
    let without_fragment = path_and_query.split('#').next().unwrap_or_default();
    match without_fragment.split_once('?') {
        Some((path, query)) => (path, Some(query)),
        None => (without_fragment, None),
    }
}

#[cfg(test)]
mod tests {
    use super::split_url;

    #[test]
    fn urls_split_into_path_and_query() {
        assert_eq!(split_url("http://127.0.0.1:8787/v1/buckets/a%2Fb/consume"), ("/v1/buckets/a%2Fb/consume", None));
        assert_eq!(split_url("https://x.example/items/7?color=red&n=1"), ("/items/7", Some("color=red&n=1")));
        assert_eq!(split_url("https://x.example"), ("/", None));
        assert_eq!(split_url("https://x.example/?"), ("/", Some("")));
        assert_eq!(split_url("https://x.example/a#frag"), ("/a", None));
    }
}
